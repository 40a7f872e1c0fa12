#version 460
// The references of a screen-grid build, one invocation each: reference r belongs to the last
// triangle whose scanned reference offset is at most r (a binary search: a triangle covering
// the whole screen spreads over many invocations, not one long loop), and names the tile it
// covers at index r - offset of its tile range (row-major) and the slab of the triangle's
// nearest depth within the frame's depth range. Its bin id, tile * slabs + slab, and the
// triangle go to the multi-split that orders the references by bin. When the frame needs more
// references than the capacity, none are written and the build reports it (GridFrame.needed).
#include "../common/prelude.glsl"
#include "grid/format.glsl"

layout(push_constant, scalar) uniform Push {
    uint64_t grid_triangles_address; // GridTriangle per triangle
    uint64_t offsets_address;        // exclusive scan of the references per triangle, then the total
    uint64_t frame_address;          // GridFrame: in: needed and z range; out: references
    uint64_t bin_ids_address;        // out: bin per reference
    uint64_t triangle_ids_address;   // out: triangle per reference
    uint count;                      // triangles
    uint capacity;                   // references that fit
    uint tiles_x;
    uint slabs;
} pc;

void main() {
    uint r = flat_workgroup_id() * WORKGROUP_SIZE + gl_LocalInvocationIndex;
    GridFrame frame = GridFrames(pc.frame_address).v[0];
    U32s offsets = U32s(pc.offsets_address);
    uint references = frame.needed <= uint64_t(pc.capacity) ? offsets.v[pc.count] : 0;
    if (r == 0) {
        GridFrames(pc.frame_address).v[0].references = references;
    }
    if (r >= references) {
        return;
    }
    uint lo = 0;
    uint hi = pc.count - 1;
    while (lo < hi) {
        uint mid = (lo + hi + 1) / 2;
        if (offsets.v[mid] <= r) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    GridTriangle triangle = GridTriangles(pc.grid_triangles_address).v[lo];
    uint k = r - offsets.v[lo];
    uvec2 first = uvec2(triangle.tiles_lo & 0xffffu, triangle.tiles_lo >> 16);
    uvec2 last = uvec2(triangle.tiles_hi & 0xffffu, triangle.tiles_hi >> 16);
    uint columns = last.x - first.x + 1;
    uvec2 tile = first + uvec2(k % columns, k / columns);
    uint slab = slab_of(frame, pc.slabs, triangle.depth);
    U32s(pc.bin_ids_address).v[r] = (tile.y * pc.tiles_x + tile.x) * pc.slabs + slab;
    U32s(pc.triangle_ids_address).v[r] = lo;
}
