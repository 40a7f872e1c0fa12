//! A tiny SPIR-V reader for tests: the types, names and offset/stride decorations of a module,
//! enough to read back the layout the GLSL compiler gave a push-constant block or a struct and
//! compare it with the Rust `#[repr(C)]` mirror, and the opcode of every instruction.
//!
//! Release builds optimise the kernels and drop `OpName`s, so structs are also found by the
//! types of their members (e.g. `["vec3<f32>", "u32", "vec3<f32>", "u32"]`).
#![allow(dead_code)]

use std::collections::HashMap;

const MAGIC: u32 = 0x0723_0203;

const OP_NAME: u32 = 5;
const OP_TYPE_BOOL: u32 = 20;
const OP_TYPE_INT: u32 = 21;
const OP_TYPE_FLOAT: u32 = 22;
const OP_TYPE_VECTOR: u32 = 23;
const OP_TYPE_ARRAY: u32 = 28;
const OP_TYPE_RUNTIME_ARRAY: u32 = 29;
const OP_TYPE_STRUCT: u32 = 30;
const OP_TYPE_POINTER: u32 = 32;
const OP_CONSTANT: u32 = 43;
const OP_VARIABLE: u32 = 59;
const OP_DECORATE: u32 = 71;
const OP_MEMBER_DECORATE: u32 = 72;

const DECORATION_ARRAY_STRIDE: u32 = 6;
const DECORATION_OFFSET: u32 = 35;
const STORAGE_CLASS_PUSH_CONSTANT: u32 = 9;

/// A type as far as layout checks care.
#[derive(Clone, Debug, PartialEq)]
pub enum Type {
    Bool,
    Int {
        width: u32,
        signed: bool,
    },
    Float {
        width: u32,
    },
    Vector {
        component: u32,
        count: u32,
    },
    /// `length` is `None` for runtime arrays.
    Array {
        element: u32,
        length: Option<u32>,
    },
    Struct {
        members: Vec<u32>,
    },
    Pointer {
        storage_class: u32,
        pointee: u32,
    },
}

/// The layout of one struct as the compiler decorated it.
#[derive(Clone, Debug, PartialEq)]
pub struct StructLayout {
    /// Result id of the `OpTypeStruct`.
    pub id: u32,
    /// `OpName`, when the module kept names.
    pub name: Option<String>,
    /// Byte offset of each member (`OpMemberDecorate ... Offset`).
    pub offsets: Vec<u32>,
    /// Byte size of each member (`None` for runtime arrays and types this reader cannot size).
    pub sizes: Vec<Option<u32>>,
    /// A short name of each member's type, e.g. `u64`, `vec3<f32>`, `struct`.
    pub shape: Vec<String>,
}

impl StructLayout {
    /// Offset plus size of the last member: the bytes the Rust mirror must at least span.
    pub fn end(&self) -> Option<u32> {
        let last = self.offsets.len().checked_sub(1)?;
        Some(self.offsets[last] + self.sizes[last]?)
    }
}

/// The parts of a SPIR-V module layout tests read.
#[derive(Default, Debug)]
pub struct Module {
    pub types: HashMap<u32, Type>,
    pub names: HashMap<u32, String>,
    /// (struct id, member index) -> byte offset.
    pub member_offsets: HashMap<(u32, u32), u32>,
    /// array type id -> stride in bytes.
    pub array_strides: HashMap<u32, u32>,
    /// 32-bit integer constants (array lengths).
    pub constants: HashMap<u32, u32>,
    /// Variables: (id, storage class, pointer type id).
    pub variables: Vec<(u32, u32, u32)>,
    /// Struct ids in declaration order.
    pub structs: Vec<u32>,
    /// Every instruction's opcode, in order.
    pub opcodes: Vec<u32>,
}

impl Module {
    /// Parses SPIR-V bytes (as `canopy::vk::Kernel::spirv` holds them).
    pub fn parse(bytes: &[u8]) -> Module {
        assert!(
            bytes.len().is_multiple_of(4) && bytes.len() >= 20,
            "not SPIR-V: {} bytes",
            bytes.len()
        );
        let words: Vec<u32> = bytes
            .chunks_exact(4)
            .map(|w| u32::from_le_bytes(w.try_into().unwrap()))
            .collect();
        assert_eq!(words[0], MAGIC, "not little-endian SPIR-V");
        let mut m = Module::default();
        let mut at = 5;
        while at < words.len() {
            let count = (words[at] >> 16) as usize;
            let opcode = words[at] & 0xffff;
            assert!(
                count > 0 && at + count <= words.len(),
                "malformed SPIR-V at word {at}"
            );
            let ops = &words[at + 1..at + count];
            m.opcodes.push(opcode);
            match opcode {
                OP_NAME => {
                    m.names.insert(ops[0], literal_string(&ops[1..]));
                }
                OP_TYPE_BOOL => {
                    m.types.insert(ops[0], Type::Bool);
                }
                OP_TYPE_INT => {
                    m.types.insert(
                        ops[0],
                        Type::Int {
                            width: ops[1],
                            signed: ops[2] != 0,
                        },
                    );
                }
                OP_TYPE_FLOAT => {
                    m.types.insert(ops[0], Type::Float { width: ops[1] });
                }
                OP_TYPE_VECTOR => {
                    m.types.insert(
                        ops[0],
                        Type::Vector {
                            component: ops[1],
                            count: ops[2],
                        },
                    );
                }
                OP_TYPE_ARRAY => {
                    let length = m.constants.get(&ops[2]).copied();
                    m.types.insert(
                        ops[0],
                        Type::Array {
                            element: ops[1],
                            length,
                        },
                    );
                }
                OP_TYPE_RUNTIME_ARRAY => {
                    m.types.insert(
                        ops[0],
                        Type::Array {
                            element: ops[1],
                            length: None,
                        },
                    );
                }
                OP_TYPE_STRUCT => {
                    m.types.insert(
                        ops[0],
                        Type::Struct {
                            members: ops[1..].to_vec(),
                        },
                    );
                    m.structs.push(ops[0]);
                }
                OP_TYPE_POINTER => {
                    m.types.insert(
                        ops[0],
                        Type::Pointer {
                            storage_class: ops[1],
                            pointee: ops[2],
                        },
                    );
                }
                OP_CONSTANT if ops.len() == 3 => {
                    m.constants.insert(ops[1], ops[2]);
                }
                OP_VARIABLE => {
                    m.variables.push((ops[1], ops[2], ops[0]));
                }
                OP_DECORATE if ops.len() >= 3 && ops[1] == DECORATION_ARRAY_STRIDE => {
                    m.array_strides.insert(ops[0], ops[2]);
                }
                OP_MEMBER_DECORATE if ops.len() >= 4 && ops[2] == DECORATION_OFFSET => {
                    m.member_offsets.insert((ops[0], ops[1]), ops[3]);
                }
                _ => {}
            }
            at += count;
        }
        m
    }

    /// Byte size of a type with explicit layout (`None` for runtime arrays and the unknown).
    pub fn size_of(&self, id: u32) -> Option<u32> {
        match self.types.get(&id)? {
            Type::Bool => None,
            Type::Int { width, .. } | Type::Float { width } => Some(width / 8),
            Type::Vector { component, count } => Some(self.size_of(*component)? * count),
            Type::Array { length, .. } => Some(self.array_strides.get(&id)? * (*length)?),
            Type::Struct { .. } => self.struct_layout(id).end(),
            Type::Pointer { .. } => Some(8),
        }
    }

    /// A short type name: `u32`, `i64`, `f32`, `vec3<f32>`, `[u32; 4]`, `[u32]`, `struct`, `ptr`.
    pub fn type_name(&self, id: u32) -> String {
        match self.types.get(&id) {
            None => format!("%{id}"),
            Some(Type::Bool) => "bool".into(),
            Some(Type::Int { width, signed }) => {
                format!("{}{width}", if *signed { 'i' } else { 'u' })
            }
            Some(Type::Float { width }) => format!("f{width}"),
            Some(Type::Vector { component, count }) => {
                format!("vec{count}<{}>", self.type_name(*component))
            }
            Some(Type::Array {
                element,
                length: Some(n),
            }) => format!("[{}; {n}]", self.type_name(*element)),
            Some(Type::Array {
                element,
                length: None,
            }) => format!("[{}]", self.type_name(*element)),
            Some(Type::Struct { .. }) => "struct".into(),
            Some(Type::Pointer { .. }) => "ptr".into(),
        }
    }

    /// The layout of struct `id`. Members without an Offset decoration read as offset
    /// `u32::MAX` (a struct used only in function memory has none).
    pub fn struct_layout(&self, id: u32) -> StructLayout {
        let Some(Type::Struct { members }) = self.types.get(&id) else {
            panic!("%{id} is not a struct");
        };
        StructLayout {
            id,
            name: self.names.get(&id).cloned(),
            offsets: (0..members.len() as u32)
                .map(|i| {
                    self.member_offsets
                        .get(&(id, i))
                        .copied()
                        .unwrap_or(u32::MAX)
                })
                .collect(),
            sizes: members.iter().map(|&t| self.size_of(t)).collect(),
            shape: members.iter().map(|&t| self.type_name(t)).collect(),
        }
    }

    /// Whether every member of struct `id` has an Offset decoration (it lives in a buffer or
    /// push constants rather than only in function or shared memory).
    pub fn is_explicitly_laid_out(&self, id: u32) -> bool {
        self.struct_layout(id)
            .offsets
            .iter()
            .all(|&o| o != u32::MAX)
    }

    /// The push-constant block: OpVariable in PushConstant -> pointer type -> struct type.
    /// `None` when the kernel declares none; panics on more than one (Vulkan allows one per
    /// entry point).
    pub fn push_constants(&self) -> Option<StructLayout> {
        let blocks: Vec<u32> = self
            .variables
            .iter()
            .filter(|v| v.1 == STORAGE_CLASS_PUSH_CONSTANT)
            .map(|v| match self.types.get(&v.2) {
                Some(Type::Pointer { pointee, .. }) => *pointee,
                other => panic!("push-constant variable %{} has type {other:?}", v.0),
            })
            .collect();
        assert!(blocks.len() <= 1, "{} push-constant blocks", blocks.len());
        blocks.first().map(|&id| self.struct_layout(id))
    }

    /// Explicitly laid-out structs called `name` (a struct used in several buffer blocks
    /// appears once per block); when none is (release builds drop names), the explicitly
    /// laid-out structs whose member types read `shape` instead.
    pub fn structs_named(&self, name: &str, shape: &[&str]) -> Vec<StructLayout> {
        let laid_out: Vec<StructLayout> = self
            .structs
            .iter()
            .filter(|&&id| self.is_explicitly_laid_out(id))
            .map(|&id| self.struct_layout(id))
            .collect();
        let named: Vec<StructLayout> = laid_out
            .iter()
            .filter(|s| s.name.as_deref() == Some(name))
            .cloned()
            .collect();
        if !named.is_empty() {
            return named;
        }
        laid_out
            .into_iter()
            .filter(|s| s.shape.iter().map(String::as_str).eq(shape.iter().copied()))
            .collect()
    }

    /// Strides of the arrays (sized or runtime) whose elements are the struct `id`.
    pub fn strides_of_arrays_of(&self, id: u32) -> Vec<u32> {
        self.types
            .iter()
            .filter(|(_, t)| matches!(t, Type::Array { element, .. } if *element == id))
            .filter_map(|(array, _)| self.array_strides.get(array).copied())
            .collect()
    }
}

fn literal_string(words: &[u32]) -> String {
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}
