// One step of a scenario as a caller of the Claude Agent SDK for TypeScript lives it: one query() in a fresh
// node process (run by the harness, never imported). The same arguments as python_step.py, plus --sdk, the SDK
// module of the installed release. The CLI the SDK starts is the harness's recording shim
// (pathToClaudeCodeExecutable), so what the SDK passed it lands in the launch journal. Prints one JSON line.
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";

const { values: args } = parseArgs({
  options: {
    sdk: { type: "string" },
    prompt: { type: "string" },
    system: { type: "string" },
    text: { type: "string", default: "" },
    resume: { type: "string" },
    continue: { type: "boolean", default: false },
    fork: { type: "boolean", default: false },
  },
});
const { query } = await import(pathToFileURL(args.sdk).href);

const options = {
  cwd: process.cwd(),
  pathToClaudeCodeExecutable: process.env.HARNESS_AGENT_BINARY,
  permissionMode: "acceptEdits", // the CLI refuses bypassPermissions as root
};
if (args.system === "preset-append") options.systemPrompt = { type: "preset", preset: "claude_code", append: args.text };
else if (args.system === "string") options.systemPrompt = args.text;
else if (args.system !== "none") throw new Error(`--system must be preset-append, string or none, not ${args.system}`);
if (args.resume) options.resume = args.resume;
if (args.continue) options.continue = true;
if (args.fork) options.forkSession = true;

const outcome = { session_id: null, is_error: null, result: null };
for await (const message of query({ prompt: args.prompt, options })) {
  if (message.type === "system" && message.subtype === "init") outcome.session_id ??= message.session_id;
  else if (message.type === "result") Object.assign(outcome, { session_id: message.session_id, is_error: message.is_error, result: message.result ?? null });
}
console.log(JSON.stringify(outcome));
process.exitCode = outcome.is_error || outcome.session_id === null ? 1 : 0;
