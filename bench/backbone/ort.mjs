// Times one ONNX file with ONNX Runtime's CPU provider: a seeded random
// float32 input of the graph's input shape, WARMUP runs, then one of:
//
//   node ort.mjs FILE.onnx THREADS FRAMES          FRAMES timed runs; prints
//       the median as one line, `ort_ms_median 6.71`.
//   node ort.mjs FILE.onnx THREADS FRAMES paced    prints `ready`, then for
//       each line on stdin times one run and prints `ort_ms 6.71`, until
//       stdin ends (the frames of bench/backbone/pair, which alternates
//       them with ours'); FRAMES is not used.
import readline from 'node:readline';
import ort from 'onnxruntime-node';

const WARMUP = 3;
const [file, threads, frames, mode = 'median'] = [process.argv[2], Number(process.argv[3]), Number(process.argv[4]), process.argv[5]];
if (!file || !(threads >= 1) || !(frames >= 1) || !['median', 'paced'].includes(mode) || process.argv.length > 6) {
  console.error('usage: node ort.mjs FILE.onnx THREADS FRAMES [paced]');
  process.exit(2);
}

const session = await ort.InferenceSession.create(file, {
  executionProviders: ['cpu'],
  intraOpNumThreads: threads,
  interOpNumThreads: 1,
  executionMode: 'sequential',
  graphOptimizationLevel: 'all',
  // ORT's workers can spin on after a run ends (for over a second on some
  // Intel hosts, by one report; under 50 ms on the Xeon of the README),
  // which in turn-taking would take a core from the other side's frame:
  // paced runs stop them when a run ends (they still spin within one).
  ...(mode === 'paced' ? { extra: { session: { force_spinning_stop: '1' } } } : {}),
});
const { name, shape } = session.inputMetadata[0];
if (!shape.every((d) => Number.isInteger(d) && d > 0)) {
  throw new Error(`input ${name} has a dynamic shape ${JSON.stringify(shape)}`);
}

// Standard normal values (Box-Muller on a 32-bit LCG), as ttm backbone --check feeds.
const data = new Float32Array(shape.reduce((a, b) => a * b, 1));
let s = 1;
const uniform = () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) + 1) / 4294967297;
for (let i = 0; i < data.length; i++) {
  data[i] = Math.sqrt(-2 * Math.log(uniform())) * Math.cos(2 * Math.PI * uniform());
}
const feeds = { [name]: new ort.Tensor('float32', data, shape) };

async function timed() {
  const start = performance.now();
  await session.run(feeds);
  return performance.now() - start;
}

for (let i = 0; i < WARMUP; i++) await session.run(feeds);
if (mode === 'paced') {
  console.log('ready');
  for await (const _ of readline.createInterface({ input: process.stdin })) {
    console.log(`ort_ms ${(await timed()).toFixed(3)}`);
  }
} else {
  const times = [];
  for (let i = 0; i < frames; i++) times.push(await timed());
  times.sort((a, b) => a - b);
  const mid = Math.floor(frames / 2);
  const median = frames % 2 ? times[mid] : (times[mid - 1] + times[mid]) / 2;
  console.log(`ort_ms_median ${median.toFixed(2)}`);
}
await session.release();

