// A reduction in one dispatch: every workgroup reduces a tile of TILE elements to a partial,
// stores it, and counts itself done on an atomic counter; the workgroup that finishes last
// reduces the partials, writes the result and resets the counter for the next use. The
// includer defines `Value`, `value_identity()`, `value_combine(a, b)`,
// `subgroup_reduce_value(v)`, `load_element(i)`, `store_partial(slot, v)`, `load_partial(slot)`
// and `store_result(v)` before including this file, and TILE (a multiple of WORKGROUP_SIZE).
#ifndef CANOPY_SINGLE_PASS_REDUCE
#define CANOPY_SINGLE_PASS_REDUCE
#include "prelude.glsl"

shared Value reduce_partials[SUBGROUPS_PER_WORKGROUP];
shared bool reduce_is_last;

// Reduces this invocation's `v` over the workgroup; the result is valid in invocation 0.
Value workgroup_reduce_value(Value v) {
    v = subgroup_reduce_value(v);
    if (subgroupElect()) {
        reduce_partials[gl_SubgroupID] = v;
    }
    barrier();
    Value result = value_identity();
    if (gl_LocalInvocationIndex == 0) {
        for (uint s = 0; s < gl_NumSubgroups; ++s) {
            result = value_combine(result, reduce_partials[s]);
        }
    }
    barrier();
    return result;
}

// `n` elements; `groups` workgroups take part; `counter_address` is a zero u32 on entry.
void single_pass_reduce(uint n, uint groups, uint64_t counter_address) {
    uint group = flat_workgroup_id();
    if (group >= groups) {
        return;
    }
    Value acc = value_identity();
    for (uint i = group * TILE + gl_LocalInvocationIndex; i < min(n, (group + 1) * TILE); i += WORKGROUP_SIZE) {
        acc = value_combine(acc, load_element(i));
    }
    acc = workgroup_reduce_value(acc);
    if (gl_LocalInvocationIndex == 0) {
        store_partial(group, acc);
        memoryBarrierBuffer();
        reduce_is_last = atomicAdd(U32s(counter_address).v[0], 1u) == groups - 1;
    }
    barrier();
    if (!reduce_is_last) {
        return;
    }
    memoryBarrierBuffer();
    acc = value_identity();
    for (uint slot = gl_LocalInvocationIndex; slot < groups; slot += WORKGROUP_SIZE) {
        acc = value_combine(acc, load_partial(slot));
    }
    acc = workgroup_reduce_value(acc);
    if (gl_LocalInvocationIndex == 0) {
        store_result(acc);
        U32s(counter_address).v[0] = 0;
    }
}

#endif
