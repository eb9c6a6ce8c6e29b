/* Prints a few entries of the tables posenc generated at build time, as decimals and as bit patterns. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "pe.h"   /* static const float pe[PE_SEQ_LEN][PE_D_MODEL] */
#include "rope.h" /* extern const float rope_cos[ROPE_SEQ_LEN][ROPE_HEAD_DIM], rope_sin[...], defined in rope.c */

static void print_entry(const char *name, const float *row, int pos, int col)
{
    uint32_t bits;
    memcpy(&bits, &row[col], sizeof bits);
    printf("%s[%d][%d] = %.9g 0x%08" PRIx32 "\n", name, pos, col, (double)row[col], bits);
}

int main(void)
{
    int col;

    printf("pe: %d x %d\n", PE_SEQ_LEN, PE_D_MODEL);
    for (col = 0; col < PE_D_MODEL; col++) {
        print_entry("pe", pe[PE_SEQ_LEN - 1], PE_SEQ_LEN - 1, col);
    }
    printf("rope: %d x %d\n", ROPE_SEQ_LEN, ROPE_HEAD_DIM);
    for (col = 0; col < ROPE_HEAD_DIM; col++) {
        print_entry("rope_cos", rope_cos[ROPE_SEQ_LEN - 1], ROPE_SEQ_LEN - 1, col);
        print_entry("rope_sin", rope_sin[ROPE_SEQ_LEN - 1], ROPE_SEQ_LEN - 1, col);
    }
    return 0;
}
