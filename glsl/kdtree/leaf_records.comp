#version 460
// The leaf records of a kd-tree (KdLeafTriangle, kdtree/format.glsl): one invocation per entry
// of the leaf triangle list writes that entry's triangle with its three vertices inline, so the
// traversal (trace.comp) tests a leaf's triangles from one contiguous run with no index or
// vertex indirection. Example: entries [7, 2] make records [(v(7).a, 7), v(7).b, v(7).c] and
// [(v(2).a, 2), v(2).b, v(2).c]. The entry count is the build's (on the device), clipped to
// the list's capacity: an overflowing build is grown and built again before it is traced.
#include "../common/prelude.glsl"
#include "../common/geometry.glsl"
#include "kdtree/format.glsl"

layout(push_constant, scalar) uniform Push {
    uint64_t leaf_triangles_address; // u32 triangle ids, each leaf's a run
    uint64_t records_address;        // out: KdLeafTriangle per entry
    uint64_t positions_address;      // vec3 per vertex
    uint64_t triangles_address;      // uvec3 per triangle
    uint64_t count_address;          // entry count on the device
    uint capacity;                   // entries the lists hold
} pc;

void main() {
    uint k = flat_workgroup_id() * WORKGROUP_SIZE + gl_LocalInvocationIndex;
    if (k >= min(U32s(pc.count_address).v[0], pc.capacity)) {
        return;
    }
    uint id = U32s(pc.leaf_triangles_address).v[k];
    uvec3 tri = UVec3s(pc.triangles_address).v[id];
    Vec3s positions = Vec3s(pc.positions_address);
    KdLeafTriangles(pc.records_address).v[k] = KdLeafTriangle(
        vec4(positions.v[tri.x], uintBitsToFloat(id)),
        vec4(positions.v[tri.y], 0.0),
        vec4(positions.v[tri.z], 0.0));
}
