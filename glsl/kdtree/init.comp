#version 460
// Starts a kd-tree build (Zhou et al. 2008 §3, initialisation): one record per triangle (its
// box and id) in the level-0 record array, the root's chunks, and the root itself as the one
// node of large level 0 with an unbounded cell (the first split takes the triangles' box). The
// counters were reset before. An empty mesh gives a root leaf without triangles and an empty
// scene box.
#include "../common/prelude.glsl"
#include "kdtree/build.glsl"

layout(push_constant, scalar) uniform Push {
    uint64_t refs_address;
    uint64_t positions_address;
    uint64_t triangles_address;
    uint triangle_count;
} pc;

void main() {
    BuildRefs b = BuildRefsRef(pc.refs_address).v;
    uint i = flat_workgroup_id() * WORKGROUP_SIZE + gl_LocalInvocationIndex;
    uint n = pc.triangle_count;
    if (i < n) {
        uvec3 t = UVec3s(pc.triangles_address).v[i];
        Vec3s positions = Vec3s(pc.positions_address);
        vec3 a = positions.v[t.x];
        vec3 c = positions.v[t.y];
        vec3 d = positions.v[t.z];
        Records(b.records[0]).v[i] = Record(min(a, min(c, d)), max(a, max(c, d)), i);
        if (i % CHUNK == 0u) {
            Chunks(b.chunks[0]).v[i / CHUNK] = Chunk(0, i);
        }
    }
    if (i != 0u) {
        return;
    }
    Entries(b.entries).v[0] = Entry(KD_LEAF, 0, NO_PARENT, 0);
    Status(b.status).v.entries = 1;
    if (n == 0u) {
        Aabbs(b.tree_bounds).v[0] = empty_aabb();
        return;
    }
    uint chunks = (n + CHUNK - 1u) / CHUNK;
    LevelCounterArray(b.levels).v[0].node_count = 1;
    LevelCounterArray(b.levels).v[0].chunk_count = chunks;
    LevelCounterArray(b.levels).v[0].chunk_grid = uvec4(fold_grid(chunks, b.max_groups_per_dim), 0u);
    LargeNodes(b.large_nodes[0]).v[0] = LargeNode(vec3(-INF), 0, vec3(INF), n, uvec3(~0u), 0,
                                                  uvec3(0u), 0, NOT_SPLIT, 0.0, 0, 0);
}
