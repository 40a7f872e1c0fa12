#version 460
// The first step of a screen-grid build: each triangle projected through the pinhole view.
// Its vertices go to view space (depth along the view direction, image coordinates scaled by
// the inverse basis); the polygon left after clipping at the near plane gives its image bounds,
// widened by a small margin for rounding so no pixel whose ray hits it is left out (no cracks
// at tile borders), clamped to the image and turned into the inclusive range of tiles holding
// those pixels' centres. Triangles behind the near plane, off screen or not finite are culled:
// no references. Degenerate (zero-area) triangles are kept like the others, as every builder
// keeps them (src/geom/mod.rs): no ray hits one, and a cull by a zero normal would depend on
// how the device rounds it (a fused cross(d, d) is a product's rounding error, not 0), which
// the CPU reference could not follow. Each writes its tile range and nearest depth, and its reference
// count for the scan (invocation `count` writes the scan's closing 0); the frame's depth range
// of triangles in view and the references needed are reduced per subgroup and added with one
// atomic per subgroup.
#include "../common/prelude.glsl"
#include "../common/geometry.glsl"
#include "grid/format.glsl"

layout(push_constant, scalar) uniform Push {
    uint64_t positions_address; // vec3 per vertex
    uint64_t triangles_address; // uvec3 per triangle
    uint64_t grid_triangles_address; // out: GridTriangle per triangle
    uint64_t counts_address;    // out: references per triangle, then 0
    uint64_t frame_address;     // GridFrame: z range and references needed, atomically
    vec3 origin;
    uint count;
    vec3 forward;
    uint width;
    vec3 right_inverse;         // right / |right|^2
    uint height;
    vec3 up_inverse;            // up / |up|^2
    uint tile_size;
    float near;
} pc;

// Pixels of rounding margin: projections and the rays' directions round independently.
const float MARGIN_PIXELS = 1.0 / 16.0;
const float MARGIN_RELATIVE = 1e-5;

// The inclusive range of pixel centres c + 0.5 within [lo, hi] (image coordinates in pixels),
// widened by the margin and clamped to 0..size-1; empty (x > y) when none.
vec2 pixel_range(float lo, float hi, uint size) {
    float first = ceil(lo - 0.5 - (MARGIN_PIXELS + MARGIN_RELATIVE * abs(lo)));
    float last = floor(hi - 0.5 + (MARGIN_PIXELS + MARGIN_RELATIVE * abs(hi)));
    return vec2(max(first, 0.0), min(last, float(size - 1)));
}

void main() {
    uint i = flat_workgroup_id() * WORKGROUP_SIZE + gl_LocalInvocationIndex;
    if (i == pc.count) {
        U32s(pc.counts_address).v[i] = 0;
    }
    uint references = 0;
    float depth = INF;
    if (i < pc.count) {
        uvec3 tri = UVec3s(pc.triangles_address).v[i];
        Vec3s positions = Vec3s(pc.positions_address);
        vec3 corners[3] = vec3[3](positions.v[tri.x], positions.v[tri.y], positions.v[tri.z]);
        // View space: (x, y) scaled so that x / z and y / z are normalised image coordinates.
        vec3 view[3];
        bool finite = true;
        for (uint k = 0; k < 3; ++k) {
            precise vec3 offset = corners[k] - pc.origin;
            view[k] = vec3(view_dot(offset, pc.right_inverse), view_dot(offset, pc.up_inverse),
                           view_dot(offset, pc.forward));
            finite = finite && !any(isinf(corners[k])) && !any(isnan(corners[k]));
        }
        vec2 lo = vec2(INF);
        vec2 hi = vec2(-INF);
        for (uint k = 0; k < 3; ++k) {
            vec3 v = view[k];
            vec3 w = view[(k + 1) % 3];
            if (v.z >= pc.near) {
                vec2 p = v.xy / v.z;
                lo = min(lo, p);
                hi = max(hi, p);
                depth = min(depth, v.z);
            }
            if ((v.z >= pc.near) != (w.z >= pc.near)) {
                // The edge crosses the near plane: its point there bounds the clipped polygon.
                vec2 p = mix(v.xy, w.xy, (pc.near - v.z) / (w.z - v.z)) / pc.near;
                lo = min(lo, p);
                hi = max(hi, p);
                depth = pc.near;
            }
        }
        bool visible = finite && depth < INF;
        vec2 size = vec2(pc.width, pc.height);
        // Normalised x grows right and y up; pixel rows grow down.
        vec2 xs = pixel_range((lo.x + 1.0) * 0.5 * size.x, (hi.x + 1.0) * 0.5 * size.x, pc.width);
        vec2 ys = pixel_range((1.0 - hi.y) * 0.5 * size.y, (1.0 - lo.y) * 0.5 * size.y, pc.height);
        visible = visible && xs.x <= xs.y && ys.x <= ys.y;
        GridTriangle out_triangle = GridTriangle(0, 0, depth, 0);
        if (visible) {
            uvec2 first = uvec2(xs.x, ys.x) / pc.tile_size;
            uvec2 last = uvec2(xs.y, ys.y) / pc.tile_size;
            out_triangle.tiles_lo = first.x | (first.y << 16);
            out_triangle.tiles_hi = last.x | (last.y << 16);
            references = (last.x - first.x + 1) * (last.y - first.y + 1);
        } else {
            depth = INF;
        }
        GridTriangles(pc.grid_triangles_address).v[i] = out_triangle;
        U32s(pc.counts_address).v[i] = references;
    }
    // The frame's depth range over triangles in view, and the references they need.
    // Summed in 16-bit halves: a subgroup's sum of 32-bit counts may not fit 32 bits.
    uint low = subgroupAdd(references & 0xffffu);
    uint high = subgroupAdd(references >> 16);
    uint64_t needed = uint64_t(low) + (uint64_t(high) << 16);
    float nearest = subgroupMin(depth);
    float farthest = subgroupMax(depth < INF ? depth : 0.0);
    if (subgroupElect()) {
        GridFrames frame = GridFrames(pc.frame_address);
        if (needed != 0) {
            atomicAdd(frame.v[0].needed, needed);
            atomicMin(frame.v[0].z_min_bits, floatBitsToUint(nearest));
            atomicMax(frame.v[0].z_max_bits, floatBitsToUint(farthest));
        }
    }
}
