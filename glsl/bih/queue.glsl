// The BIH build's work queue (src/accel/bih/build.rs): a task is a node to write, its run of
// primitive indices and its region; a large task (the large-node stage) adds the box of its
// centroids, its slices and, once its split kernel has run, the decision its partition
// kernel carries out.
#ifndef CANOPY_BIH_QUEUE
#define CANOPY_BIH_QUEUE
#include "../common/prelude.glsl"

// BihTask.flags: the parent is a clip node (the node may not be one); the run lives in the
// second index buffer (else the first); the run is the identity (position = primitive, the
// root's); the depth in bits 8 and up.
const uint TASK_BELOW_CLIP = 1u;
const uint TASK_RUN_IN_SECOND = 2u;
const uint TASK_IDENTITY = 4u;
const uint TASK_DEPTH_SHIFT = 8u;

struct BihTask {
    uint node;
    uint first;
    uint count;
    uint flags;
    vec3 region_lo;
    vec3 region_hi;
};
layout(buffer_reference, scalar, buffer_reference_align = 8) buffer BihTasks { BihTask v[]; };

struct LargeTask {
    BihTask task;
    vec3 centroid_lo;
    vec3 centroid_hi;
    uint slice_first;  // its first entry in the round's slice list
    uint kind;         // LEAF, SPLIT or CLIP (bih/binned_sah.glsl), from the split kernel
    uint axis;
    uint left_bins;
    uint left_count;
    uint left_cursor;  // primitives the partition has placed on each side so far
    uint right_cursor;
    uint pad;
};
layout(buffer_reference, scalar, buffer_reference_align = 8) buffer LargeTasks { LargeTask v[]; };

#endif
