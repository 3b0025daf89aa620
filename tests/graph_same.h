/* tests/graph_same.h: one graph against another, field by field, for the tests that build the same
 * network two ways (test_builders.c: copied cells, a node memo; alloc_failure.c: builds through a
 * memo whose allocations fail). */
#ifndef PP_TESTS_GRAPH_SAME_H
#define PP_TESTS_GRAPH_SAME_H

#include "tests/helpers.h"

#include "graph/graph.h"

/* Fails the test unless a and b are the same graph: tensors (names and their index, dtype, dims and
 * symbolic dims, flags, producer, consumers, values), nodes (names, op, domain, edges, attributes,
 * features field by field and byte for byte), totals; neither still holds a node memo. */
void pp_test_same_graph(const pp_graph *a, const pp_graph *b);

#endif
