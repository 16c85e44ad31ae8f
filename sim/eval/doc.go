// Package eval is the behavioural-cloning evaluation harness: it scores
// policies closed loop in the built-in simulator, per task family, with
// the ablations that show whether the Token Turing Machine's memory
// matters, and offline on recorded episodes (ttm eval).
//
// # Closed loop
//
// Evaluate plays N seeded episodes of every task for every run (a column:
// a checkpoint as it is, the same checkpoint under an ablation, or the
// scripted experts). Episode i of every task uses seed Seed+i, so every
// run meets the same initial states. Workers play episodes in parallel,
// each with its own copy of every policy (policy.Load, one OpenCV thread
// each); results are stored by (run, task, episode), so nothing depends on
// scheduling. A policy acts through PolicyAgent: the policy's own Step on
// the rendered frame decoded as an rgb8 image, the code path of the node;
// it never sees the privileged state.
//
// Every simulator task is one family in the ledger (Family): pick, knock,
// upright, move, drawer, and the memory tasks cue_pick, put_back and
// pointed_drawer. The groups "families" and "memory" pool the two kinds.
//
// # Ablations
//
//   - nomem: the memory is zeroed before every step (the paper's ablation,
//     policy.Policy.SetNoMemory), the same computation otherwise. A
//     checkpoint trained without memory (ttm.config no_memory) runs so
//     with no ablation: its runs' "memory" is "none (checkpoint)", and
//     nomem adds no run of its own.
//   - knockout: once per episode, right after a memory task's cue, before
//     the agent reads the frame of step Episode.CueSteps (3 for cue_pick and
//     pointed_drawer, whose ring or arrow shows in frames 0-2; 5 for
//     put_back, whose slide ends in frame 4), the policy state that holds
//     past frames, the TTM memory and the window of recent frames, is
//     reset to its episode-start value. The previous action and step count
//     are kept. The harness reads the cue length from the episode and arms
//     the agent with a step number; the agent reads nothing privileged.
//     Tasks without a cue run unchanged.
//
// # Latency
//
// Config.Latency injects the time an agent takes to compute: the world
// keeps moving meanwhile instead of waiting for every action. The
// simulator steps by Δ = 1/3 s and cannot apply part of a step, so a
// latency L is d = ceil(L/Δ) steps: the action computed on the frame of
// step t takes effect at step t+d, the previous action (at the start, a
// hold action: arm mode, no motion, gripper open) keeps being applied
// during steps t .. t+d-1, and the agent reads its next frame when its
// action takes effect, at step t+max(d,1). "measured" uses each decision's
// measured time, which makes the ledger depend on the machine; a fixed
// duration keeps it reproducible.
//
// # Outputs
//
// WriteOutputs writes into a directory:
//   - ledger.json (Ledger): setup, every run with its episodes, per-family,
//     per-group and overall statistics (success rate, 95 % Wilson interval,
//     steps to success), and at the top the first run's overall,
//     per_family and groups. Its bytes depend only on the checkpoints, the
//     tasks, the episodes, the seed, the image size and a fixed latency.
//   - timing.json (Timing): everything measured with the clock, kept out of
//     the ledger so the ledger stays reproducible: latency per decision
//     (mean, p50, p99, max, a histogram), deadline misses against the
//     control rate (default 3 Hz), wall time.
//   - summary.md: the success table (rows families, columns runs), steps to
//     success and timing.
//   - success_per_family.png and success_vs_length.png (WritePlots).
//   - videos/<run>/<task>-<episode>.gif for the first Config.Videos
//     episodes of every task.
//
// # Shards
//
// With Config.Shard = i/N an evaluation plays only the (task, episode)
// pairs k = task·Episodes + episode with k mod N = i and writes a partial
// ledger; Merge (MergeDirs for output directories) checks that the shards
// agree and cover every pair once, and gives the ledger a single run
// gives, byte for byte.
package eval
