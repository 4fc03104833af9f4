/*
 * test_readfull.c - include/readfull.h: read_full gathers a buffer from several writes,
 * stops short only at the end of the stream, and reports an error (EAGAIN on an empty
 * non-blocking pipe) as -1.
 */
#include "readfull.h"
#include "unit.h"

#include <fcntl.h>
#include <string.h>

static void test_read_full(void)
{
    int p[2];
    char b[16];
    CU_ASSERT_EQUAL_FATAL(pipe(p), 0);
    CU_ASSERT_EQUAL(write(p[1], "abc", 3), 3);
    CU_ASSERT_EQUAL(write(p[1], "defg", 4), 4);
    CU_ASSERT_EQUAL(read_full(p[0], b, 5), 5); /* across the two writes */
    CU_ASSERT_EQUAL(memcmp(b, "abcde", 5), 0);
    CU_ASSERT_EQUAL(read_full(p[0], b, 0), 0);
    close(p[1]);
    CU_ASSERT_EQUAL(read_full(p[0], b, sizeof b), 2); /* short: the end of the stream */
    CU_ASSERT_EQUAL(memcmp(b, "fg", 2), 0);
    CU_ASSERT_EQUAL(read_full(p[0], b, sizeof b), 0);
    close(p[0]);

    CU_ASSERT_EQUAL_FATAL(pipe2(p, O_NONBLOCK), 0);
    errno = 0;
    CU_ASSERT_EQUAL(read_full(p[0], b, sizeof b), -1);
    CU_ASSERT_EQUAL(errno, EAGAIN);
    close(p[0]);
    close(p[1]);
}

UNIT_SUITE(readfull, UNIT_TEST(test_read_full))
