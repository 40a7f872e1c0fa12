#version 460
// The first step of a two-level BVH's build (src/accel/bvh/instances.rs): one invocation per
// instance copies the record the host staged into device memory and writes the instance's
// world box, its mesh tree's root box (the union of the root's two child boxes, read from the
// tree so that a mesh rebuilt or refitted earlier in the command buffer is seen) carried
// through the instance's transform. The box is written as two corners, the vertices of a
// triangle (min, max, max) whose bounds are the box: the top tree is an LBVH built over these
// triangles, leaf k naming the instance in its triangle id. Each side is widened by 2^-20 of
// its terms' magnitude, so rounding never leaves a transformed triangle outside it.
#include "../common/prelude.glsl"
#include "bvh/format.glsl"
#include "bvh/instance_format.glsl"

layout(push_constant, scalar) uniform Push {
    uint64_t staged_address;    // BvhInstance per instance, written by the host
    uint64_t instances_address; // out: the same, in device memory
    uint64_t corners_address;   // out: vec3 min, vec3 max per instance
    uint count;
    uint pad;
} pc;

void main() {
    uint i = flat_workgroup_id() * WORKGROUP_SIZE + gl_LocalInvocationIndex;
    if (i >= pc.count) {
        return;
    }
    BvhInstance instance = BvhInstances(pc.staged_address).v[i];
    BvhInstances(pc.instances_address).v[i] = instance;
    BvhNode root = BvhNodes(instance.nodes_address).v[0];
    vec3 lo = min(root.left_lo, root.right_lo);
    vec3 hi = max(root.left_hi, root.right_hi);
    vec3 world_lo;
    vec3 world_hi;
    for (int row = 0; row < 3; ++row) {
        vec4 m = instance.object_to_world[row];
        // Each term's smaller and larger end (Arvo 1990).
        vec3 a = m.xyz * lo;
        vec3 b = m.xyz * hi;
        vec3 near = min(a, b);
        vec3 far = max(a, b);
        // Widened by 2^-20 of the terms' magnitude: more than their sum's rounding.
        float slack = exp2(-20.0) * (dot(max(abs(a), abs(b)), vec3(1.0)) + abs(m.w));
        world_lo[row] = near.x + near.y + near.z + m.w - slack;
        world_hi[row] = far.x + far.y + far.z + m.w + slack;
    }
    F32s corners = F32s(pc.corners_address);
    for (uint k = 0; k < 3; ++k) {
        corners.v[6 * i + k] = world_lo[k];
        corners.v[6 * i + 3 + k] = world_hi[k];
    }
}
