// preimage for @@TITLE@@: backs up what each tool call is about to change, before it runs.
// Written by `preimage install @@HARNESS@@`; `preimage uninstall @@HARNESS@@` removes it.
// Every tool call is sent to `preimage hook @@HARNESS@@` (JSON on stdin, JSON on stdout):
//   before: {block} refuses the call (the reason reaches the model), {args} rewrites it,
//           {note} is appended to the tool's output so the model learns the backup ID;
//   after:  the call's completion is recorded against its backup.
// When preimage itself cannot run, the call goes ahead unless ON_FAILURE is "deny",
// and the failure is said on stderr and in the tool's output — never a silent pass.
import { spawn } from "node:child_process"
import { accessSync, constants } from "node:fs"

const PREIMAGE = process.env.PREIMAGE_BIN || "@@PREIMAGE@@"
// The compiled hook client (no interpreter start per call); the Python client when it is
// gone from the cache or PREIMAGE_BIN names another preimage.
const CLIENT = @@CLIENT@@

function command() {
  const args = ["hook", "@@HARNESS@@", ...ARGS]
  if (CLIENT && !process.env.PREIMAGE_BIN) {
    try {
      accessSync(CLIENT, constants.X_OK)
      return [CLIENT, [PREIMAGE, ...args]]
    } catch (e) {}
  }
  return [PREIMAGE, args]
}
const ARGS = @@ARGS@@
const ON_FAILURE = "@@ON_FAILURE@@"
const notes = new Map()
// Calls whose before-answer said "after": false — no backup, no failure: their
// tool.execute.after has nothing to record, so it asks nothing (no process per call).
const quiet = new Set()

function ask(payload) {
  return new Promise((resolve) => {
    let out = ""
    let err = ""
    let child
    try {
      const [program, argv] = command()
      child = spawn(program, argv, { stdio: ["pipe", "pipe", "pipe"] })
    } catch (e) {
      resolve({ failed: `cannot run ${PREIMAGE}: ${e.message}` })
      return
    }
    child.on("error", (e) => resolve({ failed: `cannot run ${PREIMAGE}: ${e.message}` }))
    child.stdout.on("data", (d) => { out += d })
    child.stderr.on("data", (d) => { err += d })
    child.on("close", (code) => {
      if (code !== 0) {
        resolve({ failed: `${PREIMAGE} hook exited with ${code}: ${err.trim().slice(0, 500)}` })
        return
      }
      try {
        resolve(JSON.parse(out || "{}"))
      } catch (e) {
        resolve({ failed: `${PREIMAGE} hook answered something that is not JSON: ${out.slice(0, 200)}` })
      }
    })
    child.stdin.on("error", () => {})
    child.stdin.end(JSON.stringify(payload))
  })
}

export const Preimage = async ({ directory, worktree }) => ({
  "tool.execute.before": async (input, output) => {
    const answer = await ask({
      hook_event_name: "tool.execute.before", tool: input.tool, session_id: input.sessionID,
      tool_use_id: input.callID, tool_input: output.args, cwd: directory, worktree,
    })
    if (answer.failed) {
      const message = `preimage: this call is NOT backed up — ${answer.failed}`
      console.error(message)
      if (ON_FAILURE === "deny") throw new Error(message)
      notes.set(input.callID, message)
      return
    }
    if (answer.message) console.error(answer.message)
    if (answer.block) throw new Error(answer.block)
    if (answer.args && typeof answer.args === "object") Object.assign(output.args, answer.args)
    if (answer.note) notes.set(input.callID, answer.note)
    if (answer.after === false) quiet.add(input.callID)
  },
  "tool.execute.after": async (input, output) => {
    // A built-in tool's output is {title, output, metadata}; an MCP tool's is the server's
    // result ({content: [...], isError}), turned into text only after this hook.
    const mcp = Array.isArray(output.content) && typeof output.output !== "string"
    const response = mcp
      ? { output: output.content.filter((c) => c && c.type === "text").map((c) => c.text).join("\n"),
          isError: output.isError === true }
      : { title: output.title, output: output.output, metadata: output.metadata }
    const answer = quiet.delete(input.callID) ? {} : await ask({
      hook_event_name: "tool.execute.after", tool: input.tool, session_id: input.sessionID,
      tool_use_id: input.callID, tool_input: input.args, cwd: directory, worktree,
      tool_response: response,
    })
    const note = notes.get(input.callID) || answer.note || (answer.failed && `preimage: ${answer.failed}`)
    notes.delete(input.callID)
    if (!note) return
    if (mcp) output.content.push({ type: "text", text: note })
    else if (typeof output.output === "string") output.output += `\n\n${note}`
  },
})
