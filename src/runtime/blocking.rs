//! Running a blocking call (a file sync, say) off the core, on glommio's helper threads, so
//! the core keeps serving requests while it waits.

/// Runs `work` on a helper thread and awaits its result.
pub async fn run<Output, Work>(work: Work) -> Output
where
    Work: FnOnce() -> Output + Send + 'static,
    Output: Send + 'static,
{
    glommio::executor().spawn_blocking(work).await
}
