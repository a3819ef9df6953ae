// Reads a Chrome trace with Chromium DevTools' own trace engine (the Performance panel's importer, published on
// npm as @paulirish/trace_engine) and prints what it made of it as JSON: per process and thread, the complete
// slices it parsed. Usage: node read_chrome_trace.mjs <node_modules dir> <trace.json>
import {pathToFileURL} from 'node:url';

const [modules, trace] = process.argv.slice(2);
const engine = await import(pathToFileURL(`${modules}/@paulirish/trace_engine/analyze-trace.mjs`).href);
const {parsedTrace} = await engine.analyzeTrace(trace);
const data = parsedTrace.data;
const out = {bounds: data.Meta.traceBounds, processes: []};
for (const [pid, p] of data.Renderer.processes) {
  const threads = [];
  for (const [tid, t] of p.threads) {
    threads.push({tid, name: t.name ?? null,
                  slices: t.entries.filter(e => e.ph === 'X').map(e => [e.name, e.ts, e.dur, e.args])});
  }
  out.processes.push({pid, threads});
}
console.log(JSON.stringify(out));
