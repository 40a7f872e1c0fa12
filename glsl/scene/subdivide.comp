#version 460
// One level of Loop subdivision of a deforming mesh, one invocation per refined vertex: the
// weighted sum of the coarse vertices in its stencil (a row of a sparse matrix built once on
// the CPU from the topology, src/scene/animated/subdivision.rs: an old vertex's one-ring
// rule, or an edge's 3/8-3/8-1/8-1/8 rule, with the boundary rules). Rows are read in order,
// so the sums are those of the CPU reference, Stencils::apply.
#include "../common/prelude.glsl"
#include "../common/geometry.glsl"

layout(push_constant, scalar) uniform Push {
    uint64_t coarse_address;      // vec3 per coarse vertex
    uint64_t refined_address;     // out: vec3 per refined vertex
    uint64_t row_offsets_address; // u32 per refined vertex, and one past the last
    uint64_t columns_address;     // coarse vertex per stencil entry
    uint64_t weights_address;     // float per stencil entry
    uint rows;
    uint pad;
} pc;

void main() {
    uint row = flat_workgroup_id() * WORKGROUP_SIZE + gl_LocalInvocationIndex;
    if (row >= pc.rows) {
        return;
    }
    Vec3s coarse = Vec3s(pc.coarse_address);
    U32s columns = U32s(pc.columns_address);
    F32s weights = F32s(pc.weights_address);
    vec3 sum = vec3(0.0);
    uint end = U32s(pc.row_offsets_address).v[row + 1];
    for (uint k = U32s(pc.row_offsets_address).v[row]; k < end; k++) {
        sum += weights.v[k] * coarse.v[columns.v[k]];
    }
    Vec3s(pc.refined_address).v[row] = sum;
}
