#version 460
// Vertex normals of a deforming triangle mesh, one invocation per vertex: the normalised sum
// of the cross products (twice the area-weighted normals) of the triangles in the vertex's
// ring, a list built once on the CPU (src/scene/animated/normals.rs) that holds every
// triangle touching any vertex at the same rest position, so vertices split along a seam
// share one normal. With DISPLACE, the vertex is instead moved along that normal by `amount`
// times its height (the displacement of a refined surface) and written to `displaced`.
// Degenerate rings (no area) get a zero normal, which the renderer shades flat.
#include "../common/prelude.glsl"
#include "../common/geometry.glsl"

layout(constant_id = 2) const bool DISPLACE = false;

layout(push_constant, scalar) uniform Push {
    uint64_t positions_address;    // vec3 per vertex
    uint64_t triangles_address;    // uvec3 per triangle
    uint64_t ring_offsets_address; // u32 per vertex, and one past the last
    uint64_t ring_address;         // triangle indices
    uint64_t out_address;          // out: normals (vec3), or displaced positions (DISPLACE)
    uint64_t heights_address;      // float per vertex (DISPLACE)
    uint vertex_count;
    float amount;                  // displacement per unit height (DISPLACE)
} pc;

void main() {
    uint v = flat_workgroup_id() * WORKGROUP_SIZE + gl_LocalInvocationIndex;
    if (v >= pc.vertex_count) {
        return;
    }
    Vec3s positions = Vec3s(pc.positions_address);
    U32s offsets = U32s(pc.ring_offsets_address);
    vec3 sum = vec3(0.0);
    for (uint k = offsets.v[v]; k < offsets.v[v + 1]; k++) {
        uvec3 t = UVec3s(pc.triangles_address).v[U32s(pc.ring_address).v[k]];
        vec3 a = positions.v[t.x];
        sum += cross(positions.v[t.y] - a, positions.v[t.z] - a);
    }
    float length_squared = dot(sum, sum);
    vec3 normal = length_squared > 0.0 ? sum * inversesqrt(length_squared) : vec3(0.0);
    if (DISPLACE) {
        Vec3s(pc.out_address).v[v] = positions.v[v] + (pc.amount * F32s(pc.heights_address).v[v]) * normal;
    } else {
        Vec3s(pc.out_address).v[v] = normal;
    }
}
