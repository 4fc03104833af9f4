/*
 * fuzz_multiprog.c - libFuzzer target for psrun's --multi-prog parser (logger/multiprog.c):
 * the input (up to its first NUL) is a file for 1 to 8 ranks (its first byte says how many);
 * a file that parses yields each rank's arguments and the script.
 */
#include "../../logger/multiprog.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!size) return 0;
    uint32_t np = data[0] % 8 + 1;
    char *text = strndup((const char *)data + 1, size - 1);
    if (!text) return 0;
    struct lg_mprog mp;
    char err[256];
    if (lg_mprog_parse(text, np, &mp, err, sizeof err) == 0) {
        for (uint32_t r = 0; r < np; r++) {
            struct lg_strv a = {0};
            if (lg_mprog_argv(&mp, r, &a) == 0 && a.n == 0) abort(); /* a line has a program */
            lg_strv_free(&a);
        }
        free(lg_mprog_script(&mp));
        lg_mprog_free(&mp);
    }
    free(text);
    return 0;
}
