/*
 * test_multiprog.c - unit tests for logger/multiprog.c: srun's --multi-prog lines (ranges,
 * lists, '*', quotes, comments, %t and %o), the errors (a rank twice, a rank missing, a rank
 * outside the job, a bad list, an open quote), and the script's quoting.
 */
#include "../../logger/multiprog.h"
#include "unit.h"

#include <stdlib.h>
#include <string.h>

static char *argv_of(const struct lg_mprog *mp, uint32_t r)
{
    static char buf[512];
    struct lg_strv a = {0};
    CU_ASSERT_FATAL(lg_mprog_argv(mp, r, &a) == 0);
    buf[0] = 0;
    for (size_t i = 0; i < a.n; i++) {
        strcat(buf, i ? "|" : "");
        strcat(buf, a.v[i]);
    }
    lg_strv_free(&a);
    return buf;
}

static void test_parse(void)
{
    static const char text[] = "# a comment, with a quote: don't\n"
                               "\n"
                               "  0      echo zero %t %o\n"
                               "1-2,5\techo \"two words\" 'x y' a\\ b %t/%o\n"
                               "* sh -c 'echo $PSI_RANK'\r\n";
    struct lg_mprog mp;
    char err[256];
    CU_ASSERT_FATAL(lg_mprog_parse(text, 7, &mp, err, sizeof err) == 0);
    CU_ASSERT_STRING_EQUAL(argv_of(&mp, 0), "echo|zero|0|0");
    CU_ASSERT_STRING_EQUAL(argv_of(&mp, 1), "echo|two words|x y|a b|1/0");
    CU_ASSERT_STRING_EQUAL(argv_of(&mp, 2), "echo|two words|x y|a b|2/1");
    CU_ASSERT_STRING_EQUAL(argv_of(&mp, 5), "echo|two words|x y|a b|5/2");
    CU_ASSERT_STRING_EQUAL(argv_of(&mp, 3), "sh|-c|echo $PSI_RANK");
    CU_ASSERT_STRING_EQUAL(argv_of(&mp, 6), "sh|-c|echo $PSI_RANK");
    CU_ASSERT_EQUAL(mp.offset[6], 2); /* '*' counts its own ranks: 3, 4, 6 */
    char *sc = lg_mprog_script(&mp);
    CU_ASSERT_PTR_NOT_NULL_FATAL(sc);
    CU_ASSERT_PTR_NOT_NULL(strstr(sc, "1) exec 'echo' 'two words' 'x y' 'a b' '1/0';;\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(sc, "3) exec 'sh' '-c' 'echo $PSI_RANK';;\n"));
    free(sc);
    lg_mprog_free(&mp);

    /* a quote inside an argument survives the script's quoting */
    CU_ASSERT_FATAL(lg_mprog_parse("0 echo \"it's\"\n", 1, &mp, err, sizeof err) == 0);
    sc = lg_mprog_script(&mp);
    CU_ASSERT_PTR_NOT_NULL(sc && strstr(sc, "0) exec 'echo' 'it'\\''s';;"));
    free(sc);
    lg_mprog_free(&mp);
}

static void test_errors(void)
{
    struct lg_mprog mp;
    char err[256];
    static const struct {
        const char *text, *why;
        uint32_t np;
    } bad[] = {
        {"0 a\n", "rank 1 has no line", 2},
        {"0-1 a\n1 b\n", "line 2: rank 1 has a line already (1)", 2},
        {"0-4 a\n", "rank 4 is not in the job", 2},
        {"1-0 a\n", "not a list of ranks", 2},
        {"0,,1 a\n", "not a list of ranks", 2},
        {"0, a\n", "not a list of ranks", 2},
        {"-1 a\n", "not a list of ranks", 2},
        {"0 'open\n", "line 1: an unterminated '", 1},
        {"0\n", "ranks without a program", 1},
        {"* a\n* b\n", "a second '*' line", 1},
        {"0 a\\", "a backslash at the end", 1},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        CU_ASSERT_EQUAL(lg_mprog_parse(bad[i].text, bad[i].np, &mp, err, sizeof err), -1);
        if (!strstr(err, bad[i].why)) fprintf(stderr, "case %zu: %s\n", i, err);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, bad[i].why));
    }
}

UNIT_SUITE(logger_multiprog, UNIT_TEST(test_parse), UNIT_TEST(test_errors))
