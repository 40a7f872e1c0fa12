#version 460
// After the lists are sorted: the build's counters, and the root's task over every entry with
// its points' box as its cell (read in O(1) from the ends of the sorted lists). Without a
// query radius R it estimates one as src/accel/pointkd/cpu.rs query_radius does (the radius of
// a sphere holding k points at the mean density in the box) and stores it for the later
// steps and the tree's header.
#include "pointkd/build.glsl"

void main() {
    load_refs();
    if (gl_GlobalInvocationID.x != 0) {
        return;
    }
    PointKdBuildStates state = build_state();
    state.v[0] = PointKdBuildState(1, 1, 0, 0, 0, 0, 0, 0);
    vec3 lo = vec3(0.0);
    vec3 hi = vec3(0.0);
    if (refs.count > 0) {
        for (uint a = 0; a < 3; ++a) {
            lo[a] = point(U32s(refs.lists[0]).v[a * refs.stride])[a];
            hi[a] = point(U32s(refs.lists[0]).v[a * refs.stride + refs.count - 1])[a];
        }
    }
    store_task(refs.tasks[0], 0, PointKdTask(0, 0, refs.count, 0, lo, 0, hi, 0));
    if (refs.radius == 0.0) {
        float radius = density_radius(max(hi - lo, vec3(0.0)), refs.count);
        PointKdBuildRefsBuffer(pc.refs_address).r.radius = radius;
    }
}
