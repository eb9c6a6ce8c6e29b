/* Prints the dimensions of the tables and a few entries, as decimals and as bit patterns. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "pe.h"      /* static const float pe[PE_SEQ_LEN][PE_D_MODEL] */
#include "pe_long.h" /* extern const double pe_long[PE_LONG_SEQ_LEN][PE_LONG_D_MODEL], defined in pe_long.c */
#include "tables/rope.h" /* static const float rope_cos[ROPE_SEQ_LEN][ROPE_HEAD_DIM], rope_sin: posenc.toml */

static void print_float(int pos, int col)
{
    uint32_t bits;
    memcpy(&bits, &pe[pos][col], sizeof bits);
    printf("pe[%d][%d] = %.9g 0x%08" PRIx32 "\n", pos, col, pe[pos][col], bits);
}

static void print_rope(int pos, int col)
{
    uint32_t bits;
    memcpy(&bits, &rope_cos[pos][col], sizeof bits);
    printf("rope_cos[%d][%d] = %.9g 0x%08" PRIx32 "\n", pos, col, rope_cos[pos][col], bits);
}

static void print_double(int pos, int col)
{
    uint64_t bits;
    memcpy(&bits, &pe_long[pos][col], sizeof bits);
    printf("pe_long[%d][%d] = %.17g 0x%016" PRIx64 "\n", pos, col, pe_long[pos][col], bits);
}

int main(void)
{
    const int rows[] = {0, 1, PE_SEQ_LEN - 1};
    const int long_rows[] = {0, 1, PE_LONG_SEQ_LEN - 1};
    int i, col;

    printf("pe: %d x %d\n", PE_SEQ_LEN, PE_D_MODEL);
    for (i = 0; i < 3; i++) {
        for (col = 0; col < PE_D_MODEL; col++) {
            print_float(rows[i], col);
        }
    }
    printf("pe_long: %d x %d\n", PE_LONG_SEQ_LEN, PE_LONG_D_MODEL);
    for (i = 0; i < 3; i++) {
        for (col = 0; col < PE_LONG_D_MODEL; col++) {
            print_double(long_rows[i], col);
        }
    }
    printf("rope_cos: %d x %d\n", ROPE_SEQ_LEN, ROPE_HEAD_DIM);
    for (col = 0; col < ROPE_HEAD_DIM; col++) {
        print_rope(ROPE_SEQ_LEN - 1, col);
    }
    return 0;
}
