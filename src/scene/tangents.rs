//! Vertex tangents for normal textures, made with MikkTSpace (Mikkelsen 2008, the `mikktspace`
//! crate) where a glTF primitive carries none, as glTF 2.0 asks (3.7.2.1): the tangent space
//! normal maps are baked in by most tools.
//!
//! glTF's texture coordinates have v running down the image while its normal textures' +y
//! points up the image, so MikkTSpace is given (u, 1 - v): its bitangent then follows the
//! image's up, and the handedness it returns is glTF's `TANGENT.w` (the bitangent being w
//! times the normal crossed with the tangent).
//!
//! MikkTSpace gives a tangent per triangle corner; a vertex takes that of its last corner.
//! Corners of one vertex agree unless MikkTSpace splits the vertex (a mirrored or degenerate
//! texture layout meeting there), which an indexed mesh cannot express.

use mikktspace::Geometry;

use super::Mesh;

/// The triangles MikkTSpace reads and the tangents it writes.
struct Corners<'a> {
    mesh: &'a Mesh,
    normals: &'a [[f32; 3]],
    texcoords: &'a [[f32; 2]],
    tangents: Vec<[f32; 4]>,
}

impl Corners<'_> {
    fn vertex(&self, face: usize, vert: usize) -> usize {
        self.mesh.triangles[face][vert] as usize
    }
}

impl Geometry for Corners<'_> {
    fn num_faces(&self) -> usize {
        self.mesh.triangles.len()
    }

    fn num_vertices_of_face(&self, _face: usize) -> usize {
        3
    }

    fn position(&self, face: usize, vert: usize) -> [f32; 3] {
        self.mesh.positions[self.vertex(face, vert)]
    }

    fn normal(&self, face: usize, vert: usize) -> [f32; 3] {
        self.normals[self.vertex(face, vert)]
    }

    fn tex_coord(&self, face: usize, vert: usize) -> [f32; 2] {
        let [u, v] = self.texcoords[self.vertex(face, vert)];
        [u, 1.0 - v]
    }

    fn set_tangent_encoded(&mut self, tangent: [f32; 4], face: usize, vert: usize) {
        let vertex = self.vertex(face, vert);
        self.tangents[vertex] = tangent;
    }
}

/// The MikkTSpace tangent of each vertex of `mesh` (whose triangles index its vertices) for
/// texture coordinates `texcoords` (one per vertex, glTF's orientation), with the mesh's
/// normals, or area-weighted vertex normals where it has none. A vertex no triangle uses gets
/// zero (no normal texture bends the normal there), as does every vertex when MikkTSpace gives
/// up and one whose tangent is not finite; where the texture coordinates give no direction (a degenerate
/// layout), the tangent is the one MikkTSpace picks.
pub fn mikktspace_tangents(mesh: &Mesh, texcoords: &[[f32; 2]]) -> Vec<[f32; 4]> {
    let computed;
    let normals = if mesh.normals.len() == mesh.positions.len() {
        &mesh.normals
    } else {
        let mut with_normals = mesh.clone();
        with_normals.compute_vertex_normals();
        computed = with_normals.normals;
        &computed
    };
    let mut corners = Corners {
        mesh,
        normals,
        texcoords,
        tangents: vec![[0.0; 4]; mesh.positions.len()],
    };
    if !mikktspace::generate_tangents(&mut corners) {
        return vec![[0.0; 4]; mesh.positions.len()];
    }
    corners
        .tangents
        .into_iter()
        .map(|t| {
            if t.iter().all(|c| c.is_finite()) {
                t
            } else {
                [0.0; 4]
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_upright_square_has_x_tangents_of_gltf_handedness() {
        // glTF's usual layout: u along +x, v down the image (along -y).
        let mesh = Mesh {
            positions: vec![[0., 0., 0.], [1., 0., 0.], [1., 1., 0.], [0., 1., 0.]],
            normals: vec![[0., 0., 1.]; 4],
            triangles: vec![[0, 1, 2], [0, 2, 3]],
        };
        let texcoords = [[0., 1.], [1., 1.], [1., 0.], [0., 0.]];
        for t in mikktspace_tangents(&mesh, &texcoords) {
            assert!((t[0] - 1.0).abs() < 1e-6 && t[1].abs() < 1e-6 && t[2].abs() < 1e-6);
            assert_eq!(t[3], 1.0, "{t:?}");
        }
        // The image mirrored left to right: the tangent turns, the handedness flips.
        let mirrored = texcoords.map(|[u, v]| [1.0 - u, v]);
        for t in mikktspace_tangents(&mesh, &mirrored) {
            assert!((t[0] + 1.0).abs() < 1e-6, "{t:?}");
            assert_eq!(t[3], -1.0, "{t:?}");
        }
        // No layout at all: finite tangents.
        let collapsed = mikktspace_tangents(&mesh, &[[0.5, 0.5]; 4]);
        assert!(collapsed.iter().flatten().all(|c| c.is_finite()));
    }
}
