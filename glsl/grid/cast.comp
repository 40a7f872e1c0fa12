#version 460
// Closest hits of a pinhole view's camera rays through the screen grid (Patidar 2008, Alg. 1):
// one workgroup per tile, one invocation per pixel, reading its ray from the renderer's list
// (the pixel's index) so the rays are those any other structure would trace. Slabs are taken
// front to back; a slab's triangles are loaded into shared memory in batches of one per
// invocation, and every ray still searching tests the whole batch with the watertight test,
// keeping its closest hit. After a slab, a ray whose hit lies in front of the next slab is
// done: every later triangle's nearest depth is behind the slab's far boundary (the paper
// stops at any hit, which can miss a nearer triangle of a later slab whose nearest point is
// behind the hit's slab but which it pierces closer than a long triangle of the earlier
// slab). The workgroup stops when a vote finds no ray still searching.
//
// With COUNT_WORK set, each ray also writes its RayWork: nodes_visited counts the non-empty
// slabs it searched, primitives_tested its ray/triangle tests. src/accel/grid/cpu.rs casts the
// same way.
#include "../common/prelude.glsl"
#include "../common/geometry.glsl"
#include "../common/ray.glsl"
#include "../common/cutout.glsl"
#include "../common/workgroup_any.glsl"
#include "grid/format.glsl"

layout(constant_id = 3) const bool COUNT_WORK = false;

layout(push_constant, scalar) uniform Push {
    uint64_t rays_address;         // Ray per pixel, row-major
    uint64_t hits_address;         // out: Hit per pixel
    uint64_t work_address;         // out: RayWork per pixel, with COUNT_WORK
    uint64_t bin_starts_address;   // tiles * slabs + 1 reference offsets
    uint64_t triangle_ids_address; // triangle per reference, ordered by bin
    uint64_t positions_address;    // vec3 per vertex
    uint64_t triangles_address;    // uvec3 per triangle
    uint64_t frame_address;        // GridFrame of the build
    vec3 forward;                  // the view direction: a hit's depth is t * dot(direction, forward)
    uint width;
    uint height;
    uint tiles_x;
    uint tiles;
    uint slabs;
    uint tile_size;                // WORKGROUP_SIZE = tile_size^2
    uint pad;
    uint64_t cutouts_address;      // the scene's appearance where materials cut out, or 0
} pc;

// Relative widening of a hit's depth before it ends a ray: covers the rounding of t and of
// the triangles' depths, so a triangle behind the slab boundary is never nearer than the hit.
const float DEPTH_SLACK = 1.0 / 1024.0;
// Ray/triangle tests unrolled per loop step (drivers bound the iterations of a loop).
const uint UNROLL = 8;

shared vec3 batch_a[WORKGROUP_SIZE];
shared vec3 batch_b[WORKGROUP_SIZE];
shared vec3 batch_c[WORKGROUP_SIZE];
shared uint batch_triangle[WORKGROUP_SIZE];

void main() {
    uint tile = flat_workgroup_id();
    if (tile >= pc.tiles) {
        return;
    }
    uint local = gl_LocalInvocationIndex;
    uvec2 pixel = uvec2(tile % pc.tiles_x, tile / pc.tiles_x) * pc.tile_size
                + uvec2(local % pc.tile_size, local / pc.tile_size);
    bool inside = pixel.x < pc.width && pixel.y < pc.height;
    uint index = pixel.y * pc.width + pixel.x;
    Ray ray = Ray(vec3(0.0), 0.0, vec3(0.0, 0.0, 1.0), 0.0);
    if (inside) {
        ray = Rays(pc.rays_address).v[index];
    }
    RayQuery q = ray_query(ray);
    float depth_per_t = view_dot(ray.direction, pc.forward);
    float t = ray.tmax;
    uint triangle = MISS;
    vec2 uv = vec2(0.0);
    bool searching = inside;
    RayWork work = RayWork(0, 0);
    GridFrame frame = GridFrames(pc.frame_address).v[0];
    U32s starts = U32s(pc.bin_starts_address);
    U32s triangle_ids = U32s(pc.triangle_ids_address);
    uint first_bin = tile * pc.slabs;
    for (uint slab = 0; slab < pc.slabs; ++slab) {
        uint begin = starts.v[first_bin + slab];
        uint end = starts.v[first_bin + slab + 1];
        if (COUNT_WORK && searching && begin < end) {
            work.nodes_visited += 1;
        }
        for (uint base = begin; base < end; base += WORKGROUP_SIZE) {
            if (base + local < end) {
                uint id = triangle_ids.v[base + local];
                uvec3 tri = UVec3s(pc.triangles_address).v[id];
                Vec3s positions = Vec3s(pc.positions_address);
                batch_a[local] = positions.v[tri.x];
                batch_b[local] = positions.v[tri.y];
                batch_c[local] = positions.v[tri.z];
                batch_triangle[local] = id;
            }
            barrier();
            uint batch = min(WORKGROUP_SIZE, end - base);
            if (searching) {
                for (uint k = 0; k < batch; k += UNROLL) {
                    [[unroll]] for (uint j = 0; j < UNROLL; ++j) {
                        vec2 hit_uv;
                        if (k + j < batch && intersect_solid(q, batch_a[k + j], batch_b[k + j], batch_c[k + j], batch_triangle[k + j], pc.cutouts_address, t, hit_uv)) {
                            triangle = batch_triangle[k + j];
                            uv = hit_uv;
                        }
                    }
                }
                if (COUNT_WORK) {
                    work.primitives_tested += batch;
                }
            }
            barrier();
        }
        if (searching && triangle != MISS) {
            float depth = t * depth_per_t * (1.0 + DEPTH_SLACK);
            searching = behind_slab_front(frame, pc.slabs, slab + 1, depth);
        }
        if (!workgroup_any(searching)) {
            break;
        }
    }
    if (inside) {
        Hits(pc.hits_address).v[index] = Hit(t, triangle, uv.x, uv.y);
        if (COUNT_WORK) {
            RayWorks(pc.work_address).v[index] = work;
        }
    }
}
