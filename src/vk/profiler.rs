//! GPU timestamps per named stage: `begin`/`end` pairs recorded around work, read back as
//! milliseconds after the submission completes.

use super::context::Context;
use super::error::{Result, VkContext};
use ash::vk;

/// A timestamp query pool with named, possibly nested stages.
pub struct Profiler {
    ctx: Context,
    pool: vk::QueryPool,
    capacity: u32,
    used: u32,
    stages: Vec<(String, u32, Option<u32>)>,
    open: Vec<usize>,
}

impl Profiler {
    /// A profiler holding up to `max_stages` stages per recording.
    pub fn new(ctx: &Context, max_stages: u32) -> Result<Self> {
        let capacity = max_stages * 2;
        let pool = unsafe {
            ctx.device().create_query_pool(
                &vk::QueryPoolCreateInfo::default()
                    .query_type(vk::QueryType::TIMESTAMP)
                    .query_count(capacity),
                None,
            )
        }
        .call("vkCreateQueryPool")?;
        Ok(Self {
            ctx: ctx.clone(),
            pool,
            capacity,
            used: 0,
            stages: Vec::new(),
            open: Vec::new(),
        })
    }

    pub(crate) fn reset(&mut self, ctx: &Context, cmd: vk::CommandBuffer) {
        unsafe {
            ctx.device()
                .cmd_reset_query_pool(cmd, self.pool, 0, self.capacity)
        };
        self.used = 0;
        self.stages.clear();
        self.open.clear();
    }

    fn write(&mut self, ctx: &Context, cmd: vk::CommandBuffer) -> Option<u32> {
        if self.used >= self.capacity {
            log::warn!("profiler full: stage timestamps dropped");
            return None;
        }
        let query = self.used;
        self.used += 1;
        unsafe {
            ctx.device().cmd_write_timestamp2(
                cmd,
                vk::PipelineStageFlags2::ALL_COMMANDS,
                self.pool,
                query,
            )
        };
        Some(query)
    }

    pub(crate) fn begin(&mut self, ctx: &Context, cmd: vk::CommandBuffer, name: &str) {
        if let Some(q) = self.write(ctx, cmd) {
            self.open.push(self.stages.len());
            self.stages.push((name.to_string(), q, None));
        }
    }

    pub(crate) fn end(&mut self, ctx: &Context, cmd: vk::CommandBuffer) {
        if let Some(index) = self.open.pop() {
            self.stages[index].2 = self.write(ctx, cmd);
        }
    }

    /// Stage names and GPU milliseconds of the last completed recording, in begin order.
    pub fn results(&self) -> Result<Vec<(String, f64)>> {
        if self.used == 0 {
            return Ok(Vec::new());
        }
        let mut ticks = vec![0u64; self.used as usize];
        unsafe {
            self.ctx.device().get_query_pool_results(
                self.pool,
                0,
                &mut ticks,
                vk::QueryResultFlags::TYPE_64 | vk::QueryResultFlags::WAIT,
            )
        }
        .call("vkGetQueryPoolResults")?;
        let period = self.ctx.caps().timestamp_period_ns as f64;
        Ok(self
            .stages
            .iter()
            .filter_map(|(name, begin, end)| {
                let end = (*end)?;
                let dt = ticks[end as usize].wrapping_sub(ticks[*begin as usize]);
                Some((name.clone(), dt as f64 * period * 1e-6))
            })
            .collect())
    }

    /// Milliseconds of the first stage called `name`.
    pub fn stage_ms(&self, name: &str) -> Result<Option<f64>> {
        Ok(self
            .results()?
            .into_iter()
            .find(|s| s.0 == name)
            .map(|s| s.1))
    }
}

impl Drop for Profiler {
    fn drop(&mut self) {
        if !self.ctx.timed_out() {
            unsafe { self.ctx.device().destroy_query_pool(self.pool, None) };
        }
    }
}
