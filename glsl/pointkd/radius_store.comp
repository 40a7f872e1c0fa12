#version 460
// After knn.comp answered the chosen node queries of radius_select.comp: each chosen node's
// k-th neighbour radius R_i, stored by node for radius_estimate.comp (the other nodes keep
// the infinity filled in before).
#include "../common/prelude.glsl"

layout(push_constant, scalar) uniform Push {
    uint64_t chosen_address;  // node index per chosen node
    uint64_t found_address;   // uvec2 per chosen node: points within, radius bits
    uint64_t radii_address;   // out: float per node
    uint64_t count_address;   // chosen nodes
} pc;

void main() {
    uint j = flat_workgroup_id() * WORKGROUP_SIZE + gl_LocalInvocationIndex;
    if (j >= U32s(pc.count_address).v[0]) {
        return;
    }
    uint node = U32s(pc.chosen_address).v[j];
    U32s(pc.radii_address).v[node] = U32s(pc.found_address).v[2 * j + 1];
}
