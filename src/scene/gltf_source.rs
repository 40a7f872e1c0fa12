//! A glTF or GLB file read as untrusted input: the document parsed and checked, and its buffers
//! read by canopy itself, before the `gltf` crate's readers (which trust what they are given)
//! see any of it.
//!
//! What is checked, so that reading a primitive, skin or animation afterwards cannot panic or
//! allocate more than the input holds:
//! - the document passes the `gltf` crate's own validation (every index in range), which runs
//!   under [`std::panic::catch_unwind`] because some of its checks index without a bound (a
//!   required extension canopy reads from the JSON itself, `EXT_mesh_gpu_instancing`, is not
//!   held against the file);
//! - every buffer holds the bytes its `byteLength` declares, and every view lies inside its
//!   buffer with a stride of 4 to 252 bytes;
//! - every accessor's elements, and a sparse accessor's indices and values, lie inside their
//!   views, with a stride no smaller than an element;
//! - an accessor without a view (zeros, or a sparse accessor's base) claims at most as many bytes
//!   of elements as the whole input holds (a morph target's sparse offsets, 12 bytes a vertex,
//!   are always fewer than the positions they move).
//!
//! External buffers are read only as regular files (never a device, pipe or socket, which could
//! be endless or block forever), at most their declared length, and by default only from the
//! model's own folder: a URI that is absolute, uses `file:`, climbs out with `..`, or resolves
//! through a symbolic link to a place outside the folder is refused unless
//! [`AssetAccess::Anywhere`] is asked for. Errors never echo a file's bytes.

use std::io::Read;
use std::path::{Component, Path, PathBuf};

use gltf::buffer::Source;

use super::SceneError;

/// Where a model file's external buffers may be read from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AssetAccess {
    /// Only files inside the model's folder (or its subfolders): a file handed to canopy cannot
    /// make it read anything else the user can read.
    #[default]
    ModelFolder,
    /// Any regular file the URI names, absolute or relative (`canopy render
    /// --allow-outside-assets`).
    Anywhere,
}

/// A glTF or GLB file read with its buffers, checked as the module docs say.
pub(super) struct GltfFile {
    /// The JSON document.
    pub document: gltf::Document,
    /// The buffers' bytes, each exactly its declared length.
    pub buffers: Vec<Vec<u8>>,
    /// Where its external files may be read from.
    access: AssetAccess,
}

impl GltfFile {
    /// Reads and checks the file at `path` and the buffers it refers to.
    pub fn open(path: &Path, access: AssetAccess) -> Result<Self, SceneError> {
        let bytes = read_regular_file(path, None).map_err(|e| SceneError::io(path, e))?;
        check_glb_length(path, &bytes)?;
        let gltf::Gltf { document, blob } = guarded(path, "document", || {
            let read = gltf::Gltf::from_slice_without_validation(&bytes)?;
            // The crate refuses a required extension it does not model, even one canopy
            // reads from the JSON itself.
            let mut json = read.document.into_json();
            json.extensions_required
                .retain(|name| !READ_FROM_JSON.contains(&name.as_str()));
            Ok::<_, gltf::Error>(gltf::Gltf {
                document: gltf::Document::from_json(json)?,
                blob: read.blob,
            })
        })?
        .map_err(|e| SceneError::malformed(path, "document", e.to_string()))?;
        let buffers = read_buffers(path, &document, blob, access)?;
        let input_bytes = bytes.len() as u64 + buffers.iter().map(|b| b.len() as u64).sum::<u64>();
        check_views(path, &document, &buffers)?;
        check_accessors(path, &document, input_bytes)?;
        Ok(Self {
            document,
            buffers,
            access,
        })
    }

    /// The encoded bytes of `image`: its view of a buffer, its `data:` URI decoded, or its
    /// file (as [`external_file`] allows, at most [`MAX_IMAGE_FILE_BYTES`]). The error says
    /// why, for the caller to name the image.
    pub fn image_bytes(&self, path: &Path, image: &gltf::Image) -> Result<Vec<u8>, String> {
        match image.source() {
            gltf::image::Source::View { view, .. } => {
                let start = view.offset();
                Ok(self.buffers[view.buffer().index()][start..start + view.length()].to_vec())
            }
            gltf::image::Source::Uri { uri, .. } if uri.starts_with("data:") => {
                decode_data_uri(uri)
            }
            gltf::image::Source::Uri { uri, .. } => {
                let file = external_file(path, uri, self.access)?;
                let bytes = read_regular_file(&file, Some(MAX_IMAGE_FILE_BYTES + 1))
                    .map_err(|e| format!("its file {} cannot be read: {e}", file.display()))?;
                if bytes.len() as u64 > MAX_IMAGE_FILE_BYTES {
                    return Err(format!(
                        "its file {} is larger than {MAX_IMAGE_FILE_BYTES} bytes",
                        file.display()
                    ));
                }
                Ok(bytes)
            }
        }
    }

    /// The bytes of `buffer`, for the crate's accessor readers.
    pub fn buffer<'s>(&'s self) -> impl Clone + Fn(gltf::Buffer) -> Option<&'s [u8]> {
        |b: gltf::Buffer| self.buffers.get(b.index()).map(|data| &data[..])
    }
}

/// The extensions canopy reads from the document's JSON itself, which a file may require.
const READ_FROM_JSON: [&str; 1] = ["EXT_mesh_gpu_instancing"];

/// The largest image file read.
pub(super) const MAX_IMAGE_FILE_BYTES: u64 = 1 << 30;

/// Runs `read` (a use of a decoding crate, `gltf`, `image`, `exr`, `las`, on checked input), turning a panic inside it into
/// an error at `location`: canopy's checks are the first line, this is the last. Such a panic
/// is an answer, not a crash: it is not reported by the panic hook (no message, no backtrace).
pub(super) fn guarded<T>(
    path: &Path,
    location: &str,
    read: impl FnOnce() -> T,
) -> Result<T, SceneError> {
    quiet_panics_while_guarded();
    GUARDED.with(|guarded| guarded.set(guarded.get() + 1));
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(read));
    GUARDED.with(|guarded| guarded.set(guarded.get() - 1));
    outcome.map_err(|panic| {
        let reason = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "no reason given".into());
        SceneError::malformed(
            path,
            location,
            format!("its decoder rejected the file ({reason})"),
        )
    })
}

thread_local! {
    /// How many [`guarded`] calls this thread is inside.
    static GUARDED: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Installs, once per process, a panic hook that stays silent for panics inside [`guarded`] and
/// hands every other panic to the hook that was there before.
fn quiet_panics_while_guarded() {
    static INSTALL: std::sync::Once = std::sync::Once::new();
    INSTALL.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if GUARDED.with(|guarded| guarded.get()) == 0 {
                previous(info);
            }
        }));
    });
}

/// Reads the regular file at `path`, at most `limit` bytes of it when given. A device, pipe or
/// socket is refused before anything is read from it (it is opened without blocking, so a pipe
/// with no writer cannot hang the open either).
fn read_regular_file(path: &Path, limit: Option<u64>) -> std::io::Result<Vec<u8>> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NONBLOCK);
    let file = options.open(path)?;
    let kind = file.metadata()?.file_type();
    if !kind.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            if kind.is_dir() {
                "a folder, not a file"
            } else {
                "a device, pipe or socket, not a regular file"
            },
        ));
    }
    let mut bytes = Vec::new();
    file.take(limit.unwrap_or(u64::MAX))
        .read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// A GLB file (by its magic) shorter than its header or than the length its header declares
/// is truncated: say so and where, rather than the reader's "failed to fill whole buffer".
fn check_glb_length(path: &Path, bytes: &[u8]) -> Result<(), SceneError> {
    let is_glb = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("glb"));
    if is_glb && bytes.len() < 12 {
        return Err(SceneError::malformed(
            path,
            "header",
            format!(
                "the file is truncated: {} bytes, a GLB header alone is 12",
                bytes.len()
            ),
        ));
    }
    if bytes.len() >= 12 && &bytes[..4] == b"glTF" {
        let declared = u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as u64;
        let length = bytes.len() as u64;
        if declared > length {
            return Err(SceneError::malformed(
                path,
                "header",
                format!(
                    "the file is truncated: its header declares {declared} bytes, the file has \
                     {length} (it ends {} bytes early)",
                    declared - length
                ),
            ));
        }
    }
    Ok(())
}

/// Every buffer's bytes, exactly its declared length: the GLB's binary chunk, a `data:` URI
/// decoded, or a file read as [`external_file`] allows.
fn read_buffers(
    path: &Path,
    document: &gltf::Document,
    mut blob: Option<Vec<u8>>,
    access: AssetAccess,
) -> Result<Vec<Vec<u8>>, SceneError> {
    document
        .buffers()
        .map(|buffer| {
            let location = format!("buffer {}", buffer.index());
            let declared = buffer.length();
            let mut data = match buffer.source() {
                Source::Bin => blob.take().ok_or_else(|| {
                    SceneError::malformed(
                        path,
                        &location,
                        "the buffer is the GLB's binary chunk, and the file has none",
                    )
                })?,
                Source::Uri(uri) if uri.starts_with("data:") => decode_data_uri(uri)
                    .map_err(|message| SceneError::malformed(path, &location, message))?,
                Source::Uri(uri) => {
                    let file = external_file(path, uri, access)
                        .map_err(|message| SceneError::malformed(path, &location, message))?;
                    read_regular_file(&file, Some(declared as u64)).map_err(|e| {
                        SceneError::malformed(
                            path,
                            &location,
                            format!("its file {} cannot be read: {e}", file.display()),
                        )
                    })?
                }
            };
            if data.len() < declared {
                return Err(SceneError::malformed(
                    path,
                    &location,
                    format!(
                        "the buffer declares {declared} bytes (byteLength) and holds {}",
                        data.len()
                    ),
                ));
            }
            data.truncate(declared);
            Ok(data)
        })
        .collect()
}

/// The bytes of a `data:[<type>][;base64],<data>` URI.
fn decode_data_uri(uri: &str) -> Result<Vec<u8>, String> {
    let (header, data) = uri
        .split_once(',')
        .ok_or("its data: URI has no ',' before the data")?;
    if header.ends_with(";base64") {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD
            .decode(data.trim_end())
            .map_err(|e| format!("its data: URI is not valid base64 ({e})"))
    } else {
        percent_decode(data)
    }
}

/// `text` with its `%XX` escapes decoded.
fn percent_decode(text: &str) -> Result<Vec<u8>, String> {
    let mut bytes = Vec::with_capacity(text.len());
    let mut rest = text.as_bytes();
    while let Some((&byte, tail)) = rest.split_first() {
        if byte == b'%' {
            let hex = tail
                .get(..2)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or("its URI has a '%' not followed by two hexadecimal digits")?;
            bytes.push(hex);
            rest = &tail[2..];
        } else {
            bytes.push(byte);
            rest = tail;
        }
    }
    Ok(bytes)
}

/// The file an external buffer's URI names, relative to the model's folder: refused when the
/// URI is not a relative path (another scheme, `file:`, an absolute path) or, with
/// [`AssetAccess::ModelFolder`], when it leads outside the model's folder by `..` or through a
/// symbolic link.
fn external_file(model: &Path, uri: &str, access: AssetAccess) -> Result<PathBuf, String> {
    let decoded = String::from_utf8(percent_decode(uri)?)
        .map_err(|_| "its URI decodes to bytes that are not UTF-8".to_string())?;
    let relative = match decoded.split_once(':') {
        // A scheme is letters before the first ':' (RFC 3986); `C:` drive letters are paths.
        Some((scheme, rest))
            if scheme.len() > 1 && scheme.chars().all(|c| c.is_ascii_alphabetic()) =>
        {
            if !scheme.eq_ignore_ascii_case("file") || access == AssetAccess::ModelFolder {
                return Err(format!(
                    "its URI uses the '{scheme}:' scheme; canopy reads buffers and images from \
                     files in the model's folder (--allow-outside-assets reads file: URIs anywhere)"
                ));
            }
            rest.trim_start_matches("//").to_string()
        }
        _ => decoded,
    };
    let folder = model.parent().unwrap_or(Path::new("."));
    let file = folder.join(&relative);
    if access == AssetAccess::Anywhere {
        return Ok(file);
    }
    let leaves = Path::new(&relative)
        .components()
        .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir));
    let outside = || {
        format!(
            "its file '{relative}' lies outside the model's folder; canopy reads a model's \
             buffers and images only from its folder unless told otherwise (--allow-outside-assets)"
        )
    };
    if leaves {
        return Err(outside());
    }
    // A symbolic link inside the folder may still lead out of it.
    let folder = folder
        .canonicalize()
        .map_err(|e| format!("the model's folder cannot be resolved: {e}"))?;
    match file.canonicalize() {
        Ok(resolved) if !resolved.starts_with(&folder) => Err(outside()),
        Ok(resolved) => Ok(resolved),
        Err(e) => Err(format!("its file {} cannot be read: {e}", file.display())),
    }
}

/// Every view lies inside its buffer, with a stride glTF allows.
fn check_views(
    path: &Path,
    document: &gltf::Document,
    buffers: &[Vec<u8>],
) -> Result<(), SceneError> {
    for view in document.views() {
        let location = format!("bufferView {}", view.index());
        let buffer_length = buffers[view.buffer().index()].len() as u64;
        let end = view.offset() as u64 + view.length() as u64;
        if end > buffer_length {
            return Err(SceneError::malformed(
                path,
                location,
                format!("the view ends at byte {end}, past its buffer's {buffer_length} bytes"),
            ));
        }
        if let Some(stride) = view.stride()
            && !(4..=252).contains(&stride)
        {
            return Err(SceneError::malformed(
                path,
                location,
                format!("byteStride {stride} is outside glTF's 4 to 252"),
            ));
        }
    }
    Ok(())
}

/// Every accessor's data lies inside its view (see the module docs), and one without a view
/// claims at most `input_bytes` bytes of elements (the file and its buffers).
fn check_accessors(
    path: &Path,
    document: &gltf::Document,
    input_bytes: u64,
) -> Result<(), SceneError> {
    for accessor in document.accessors() {
        let location = format!("accessor {}", accessor.index());
        let error = |message: String| SceneError::malformed(path, &location, message);
        let count = accessor.count() as u64;
        let element = accessor.size() as u64;
        if count == 0 {
            return Err(error("the accessor has no elements (count 0)".into()));
        }
        match accessor.view() {
            Some(view) => {
                let stride = view.stride().map_or(element, |s| s as u64);
                if stride < element {
                    return Err(error(format!(
                        "its view's byteStride {stride} is smaller than its {element}-byte \
                         elements"
                    )));
                }
                let end = (count - 1)
                    .saturating_mul(stride)
                    .saturating_add(accessor.offset() as u64 + element);
                check_inside(view.length() as u64, end, "its elements").map_err(&error)?;
            }
            None if count.saturating_mul(element) > input_bytes => {
                return Err(error(format!(
                    "the accessor has no bufferView and claims {count} elements of {element} \
                     bytes, more than the {input_bytes} bytes of the whole input"
                )));
            }
            None => {}
        }
        if let Some(sparse) = accessor.sparse() {
            let sparse_count = sparse.count() as u64;
            if sparse_count > count {
                return Err(error(format!(
                    "{sparse_count} sparse elements for an accessor of {count}"
                )));
            }
            let indices = sparse.indices();
            let index_bytes = indices.index_type().size() as u64;
            let end =
                (indices.offset() as u64).saturating_add(sparse_count.saturating_mul(index_bytes));
            check_inside(indices.view().length() as u64, end, "its sparse indices")
                .map_err(&error)?;
            let values = sparse.values();
            let end = (values.offset() as u64).saturating_add(sparse_count.saturating_mul(element));
            check_inside(values.view().length() as u64, end, "its sparse values")
                .map_err(&error)?;
        }
    }
    Ok(())
}

/// An error unless `end` is within a view of `length` bytes.
fn check_inside(length: u64, end: u64, what: &str) -> Result<(), String> {
    if end > length {
        return Err(format!(
            "{what} end at byte {end} of a {length}-byte bufferView"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_escapes_decode_and_bad_ones_are_errors() {
        assert_eq!(percent_decode("a%20b.bin").unwrap(), b"a b.bin");
        assert_eq!(percent_decode("%FF%FE.bin").unwrap(), b"\xff\xfe.bin");
        assert!(percent_decode("a%2").is_err());
        assert!(percent_decode("a%zz").is_err());
    }

    #[test]
    fn data_uris_decode() {
        assert_eq!(
            decode_data_uri("data:application/octet-stream;base64,AAEC").unwrap(),
            [0, 1, 2]
        );
        assert!(decode_data_uri("data:application/octet-stream;base64,***").is_err());
        assert!(decode_data_uri("data:nocomma").is_err());
    }
}
