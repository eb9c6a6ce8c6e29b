/* Prints a few entries of the tables the genrules generated, as decimals and as bit patterns. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "alibi.h"           /* static const float alibi_slopes[ALIBI_HEADS], alibi_bias[...] */
#include "pe.h"              /* static const float pe[PE_SEQ_LEN][PE_D_MODEL] */
#include "rope.h"            /* extern const float rope_cos[ROPE_SEQ_LEN][ROPE_HEAD_DIM], ... (rope.c) */
#include "t5_buckets.h"      /* static const int8_t t5_buckets[T5_BUCKETS_QUERY][T5_BUCKETS_KEY] */
#include "tables/pe_q15.h"   /* static const int16_t pe_q15[PE_Q15_SEQ_LEN][PE_Q15_D_MODEL] */

static void print_float(const char *name, float value)
{
    uint32_t bits;
    memcpy(&bits, &value, sizeof bits);
    printf("%s = %.9g 0x%08" PRIx32 "\n", name, (double)value, bits);
}

int main(void)
{
    print_float("pe[1][0]", pe[1][0]);
    print_float("rope_cos[127][1]", rope_cos[ROPE_SEQ_LEN - 1][1]);
    print_float("alibi_slopes[7]", alibi_slopes[ALIBI_HEADS - 1]);
    printf("t5_buckets[0][15] = %d\n", t5_buckets[0][T5_BUCKETS_KEY - 1]);
    printf("pe_q15[2][0] = %d\n", pe_q15[2][0]);
    return 0;
}
