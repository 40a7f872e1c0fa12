// The union of boxes as the value of common/single_pass_reduce.glsl: the includer includes
// this, then defines load_element, store_partial, load_partial and store_result, then includes
// single_pass_reduce.glsl.
#ifndef CANOPY_AABB_UNION
#define CANOPY_AABB_UNION
#include "geometry.glsl"

#define Value Aabb

Value value_identity() {
    return empty_aabb();
}
Value value_combine(Value a, Value b) {
    return Aabb(min(a.lo, b.lo), 0, max(a.hi, b.hi), 0);
}
Value subgroup_reduce_value(Value v) {
    return Aabb(subgroupMin(v.lo), 0, subgroupMax(v.hi), 0);
}

#endif
