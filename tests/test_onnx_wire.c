/* tests/test_onnx_wire.c: the ONNX loader on hand-encoded protobuf bytes that the protobuf-c
 * builder of test_onnx_load.c cannot write: fields of the wrong wire type, and nesting bombs
 * (types nested past the loader's depth limit), each rejected as a parse error. */
#include "tests/helpers.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"

typedef struct bytes {
    uint8_t *p;
    size_t n, cap;
} bytes;

static void put(bytes *b, const void *d, size_t n)
{
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
        assert_non_null(b->p);
    }
    if (n) memcpy(b->p + b->n, d, n);
    b->n += n;
}

static void put_varint(bytes *b, uint64_t v)
{
    do {
        uint8_t c = (uint8_t)(v & 0x7f);
        v >>= 7;
        if (v) c |= 0x80;
        put(b, &c, 1);
    } while (v);
}

static void put_len_field(bytes *b, unsigned field, const bytes *msg)
{
    put_varint(b, (uint64_t)field << 3 | 2);
    put_varint(b, msg->n);
    put(b, msg->p, msg->n);
}

static perfpred_status load_bytes(const bytes *b, const char *name, pp_err *err)
{
    pp_graph *g = NULL;
    perfpred_status st = pp_onnx_load_buffer(name, b->p, b->n, &g, err);
    pp_graph_free(g);
    return st;
}

static void onnx_load_should_reject_wrong_wire_types_and_deep_nesting(void **state)
{
    bytes opset = {0}, m = {0};
    put_varint(&opset, 2 << 3 | 0);   /* OperatorSetIdProto.version = 13 */
    put_varint(&opset, 13);
    /* ModelProto: ir_version 8, graph as a varint (wrong wire type), opset_import */
    put_varint(&m, 1 << 3 | 0);
    put_varint(&m, 8);
    put_varint(&m, 7 << 3 | 0);
    put_varint(&m, 1);
    put_len_field(&m, 8, &opset);
    pp_err err = {0};
    assert_int_equal(load_bytes(&m, "wire.onnx", &err), PERFPRED_ERR_PARSE);
    assert_non_null(strstr(err.msg, "wire.onnx: not a valid ONNX model"));
    free(m.p);

    /* ir_version as a string */
    m = (bytes){0};
    bytes s = {0};
    put(&s, "8", 1);
    put_len_field(&m, 1, &s);
    put_len_field(&m, 8, &opset);
    assert_int_equal(load_bytes(&m, "wire2.onnx", &err), PERFPRED_ERR_PARSE);
    assert_non_null(strstr(err.msg, "wire2.onnx"));
    free(m.p);
    free(s.p);

    /* a TensorProto whose packed dims are a broken varint */
    bytes t = {0}, gr = {0};
    put_varint(&t, 1 << 3 | 2);
    put_varint(&t, 2);
    put(&t, "\xff\xff", 2);
    put_len_field(&gr, 5, &t);
    m = (bytes){0};
    put_varint(&m, 1 << 3 | 0);
    put_varint(&m, 8);
    put_len_field(&m, 7, &gr);
    put_len_field(&m, 8, &opset);
    assert_int_equal(load_bytes(&m, "dims.onnx", &err), PERFPRED_ERR_PARSE);
    assert_non_null(strstr(err.msg, "dims.onnx: not a valid ONNX model (malformed packed dims"));
    free(m.p);
    free(t.p);
    free(gr.p);

    /* graph input type: Sequence(Sequence(...)) 100 deep. The loader's limit is 48; without one,
     * protobuf-c recurses once per level and a few hundred KB of this exhaust the stack. */
    bytes ty = {0};
    for (int i = 0; i < 100; i++) {
        /* wrap: TypeProto{sequence_type: Sequence{elem_type: <ty>}} */
        bytes seq = {0}, outer = {0};
        put_len_field(&seq, 1, &ty);
        put_len_field(&outer, 4, &seq);
        free(ty.p);
        free(seq.p);
        ty = outer;
    }
    bytes vi = {0}, name = {0};
    put(&name, "x", 1);
    put_len_field(&vi, 1, &name);
    put_len_field(&vi, 2, &ty);
    gr = (bytes){0};
    put_len_field(&gr, 11, &vi);
    m = (bytes){0};
    put_varint(&m, 1 << 3 | 0);
    put_varint(&m, 8);
    put_len_field(&m, 7, &gr);
    put_len_field(&m, 8, &opset);
    assert_int_equal(load_bytes(&m, "deep.onnx", &err), PERFPRED_ERR_PARSE);
    assert_non_null(strstr(err.msg, "deep.onnx: not a valid ONNX model (messages nested too deeply"));
    free(m.p);
    free(gr.p);
    free(vi.p);
    free(name.p);
    free(ty.p);
    free(opset.p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(onnx_load_should_reject_wrong_wire_types_and_deep_nesting),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
