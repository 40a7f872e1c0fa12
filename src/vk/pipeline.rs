//! Compute pipelines built from the SPIR-V that build.rs embeds, specialised per device.
//!
//! Every kernel uses one pipeline layout: a 128-byte push-constant block (buffer device
//! addresses and sizes) and no descriptor sets. Specialization constant 0 is the workgroup
//! size, 1 the subgroup size; kernels number their own constants from 2 and the host sets
//! them by the names the GLSL gives them ([`Kernel::constants`], read from the SPIR-V by
//! build.rs), so a misspelt or removed constant is an error, not a silent default.

use super::context::Context;
use super::error::{Error, Result, VkContext};
use ash::vk;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Bytes of push constants every kernel may use.
pub const PUSH_CONSTANT_BYTES: u32 = 128;

/// A compute kernel compiled into the binary.
#[derive(Clone, Copy, Debug)]
pub struct Kernel {
    /// Path under `glsl/` without extension, e.g. `prims/scan`.
    pub name: &'static str,
    /// SPIR-V bytes.
    pub spirv: &'static [u8],
    /// The kernel's own specialization constants: (name in the GLSL, constant id).
    pub constants: &'static [(&'static str, u32)],
}

impl Kernel {
    /// The constant id of each of `values`' names, paired with its value and sorted by id; an
    /// error naming the kernel's constants when one is not among them.
    fn constant_ids(&self, values: &[(&str, u32)]) -> Result<Vec<(u32, u32)>> {
        let mut ids = values
            .iter()
            .map(|&(name, value)| {
                let (_, id) = self
                    .constants
                    .iter()
                    .find(|(known, _)| *known == name)
                    .ok_or_else(|| {
                        let known: Vec<&str> = self.constants.iter().map(|(n, _)| *n).collect();
                        Error::InvalidInput(format!(
                            "kernel {} has no specialization constant {name} (it has: {})",
                            self.name,
                            known.join(", ")
                        ))
                    })?;
                Ok((*id, value))
            })
            .collect::<Result<Vec<_>>>()?;
        ids.sort_unstable();
        Ok(ids)
    }
}

/// A compute pipeline: a kernel specialised for a workgroup size and kernel constants.
#[derive(Debug)]
pub struct Pipeline {
    pub(crate) raw: vk::Pipeline,
    pub(crate) layout: vk::PipelineLayout,
    /// Kernel name, for profiling and errors.
    pub name: &'static str,
    /// Invocations per workgroup.
    pub workgroup_size: u32,
}

type PipelineKey = (&'static str, u32, Vec<(u32, u32)>);

pub(crate) struct PipelineCache {
    layout: vk::PipelineLayout,
    pipelines: Mutex<HashMap<PipelineKey, Arc<Pipeline>>>,
}

impl PipelineCache {
    pub fn new(device: &ash::Device) -> Result<Self> {
        let ranges = [vk::PushConstantRange::default()
            .stage_flags(vk::ShaderStageFlags::COMPUTE)
            .size(PUSH_CONSTANT_BYTES)];
        let layout = unsafe {
            device.create_pipeline_layout(
                &vk::PipelineLayoutCreateInfo::default().push_constant_ranges(&ranges),
                None,
            )
        }
        .call("vkCreatePipelineLayout")?;
        Ok(Self {
            layout,
            pipelines: Mutex::default(),
        })
    }

    pub unsafe fn destroy(&self, device: &ash::Device) {
        for pipeline in self.pipelines.lock().unwrap().values() {
            unsafe { device.destroy_pipeline(pipeline.raw, None) };
        }
        unsafe { device.destroy_pipeline_layout(self.layout, None) };
    }
}

impl Context {
    /// The pipeline of `kernel` with `workgroup_size` invocations and its specialization
    /// constants set by name (`&[("ANY_HIT", 1)]`; those not named keep the GLSL's default),
    /// created on first use and cached.
    pub fn pipeline(
        &self,
        kernel: &Kernel,
        workgroup_size: u32,
        constants: &[(&str, u32)],
    ) -> Result<Arc<Pipeline>> {
        let caps = self.caps();
        if workgroup_size == 0 || workgroup_size > caps.max_workgroup_size {
            return Err(Error::MissingFeature {
                device: caps.name.clone(),
                what: format!(
                    "workgroups of {workgroup_size} invocations for {}",
                    kernel.name
                ),
            });
        }
        let cache = &self.shared.pipelines;
        let constants = kernel.constant_ids(constants)?;
        let key = (kernel.name, workgroup_size, constants.clone());
        if let Some(p) = cache.pipelines.lock().unwrap().get(&key) {
            return Ok(p.clone());
        }
        let device = &self.shared.device;
        let words = ash::util::read_spv(&mut std::io::Cursor::new(kernel.spirv))
            .map_err(|e| Error::InvalidInput(format!("SPIR-V of {}: {e}", kernel.name)))?;
        let module = unsafe {
            device.create_shader_module(&vk::ShaderModuleCreateInfo::default().code(&words), None)
        }
        .call("vkCreateShaderModule")?;

        let ids_and_values = [(0, workgroup_size), (1, caps.subgroup_size)]
            .into_iter()
            .chain(constants.iter().copied());
        let (ids, values): (Vec<u32>, Vec<u32>) = ids_and_values.unzip();
        let entries: Vec<vk::SpecializationMapEntry> = (0..ids.len() as u32)
            .map(|i| {
                vk::SpecializationMapEntry::default()
                    .constant_id(ids[i as usize])
                    .offset(i * 4)
                    .size(4)
            })
            .collect();
        let spec = vk::SpecializationInfo::default()
            .map_entries(&entries)
            .data(bytemuck::cast_slice(&values));
        let mut required_size = vk::PipelineShaderStageRequiredSubgroupSizeCreateInfo::default()
            .required_subgroup_size(caps.subgroup_size);
        let mut stage = vk::PipelineShaderStageCreateInfo::default()
            .stage(vk::ShaderStageFlags::COMPUTE)
            .module(module)
            .name(c"main")
            .specialization_info(&spec);
        // Full subgroups of exactly `subgroup_size` lanes, so the constant matches the hardware.
        if caps.full_subgroups && workgroup_size.is_multiple_of(caps.subgroup_size) {
            stage = stage
                .flags(vk::PipelineShaderStageCreateFlags::REQUIRE_FULL_SUBGROUPS)
                .push_next(&mut required_size);
        }
        let info = vk::ComputePipelineCreateInfo::default()
            .stage(stage)
            .layout(cache.layout);
        let result =
            unsafe { device.create_compute_pipelines(vk::PipelineCache::null(), &[info], None) };
        unsafe { device.destroy_shader_module(module, None) };
        let raw = result.map_err(|(_, result)| Error::Vulkan {
            call: "vkCreateComputePipelines",
            result,
        })?[0];
        let pipeline = Arc::new(Pipeline {
            raw,
            layout: cache.layout,
            name: kernel.name,
            workgroup_size,
        });
        cache
            .pipelines
            .lock()
            .unwrap()
            .insert(key, pipeline.clone());
        Ok(pipeline)
    }
}
