// preimage for @@TITLE@@: backs up what each tool call is about to change, before it runs.
// Written by `preimage install @@HARNESS@@`; `preimage uninstall @@HARNESS@@` removes it.
// Every tool call is sent to `preimage hook @@HARNESS@@` (JSON on stdin, JSON on stdout):
//   before: {block} refuses the call (the reason reaches the model), {args} rewrites it,
//           {note} is appended to the tool's output so the model learns the backup ID;
//   after:  the call's completion is recorded against its backup; its {note} (the undo
//           the call allows) is appended after the one before.
// When preimage itself cannot run, the call goes ahead unless ON_FAILURE is "deny",
// and the failure is said on stderr and in the tool's output — never a silent pass.
import { spawn, spawnSync } from "node:child_process"
import { accessSync, constants } from "node:fs"
import { createConnection } from "node:net"

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

// The decision service's socket and the client's waits, asked of the compiled client once:
// later calls talk to the service here, as the client would (its wire protocol and its
// timeouts), with no process per call.
// Anything but a served answer goes the client's way: a service that is not there or
// refuses the call -> the client (it decides in-process and starts one); a service that
// took the call and gave no answer -> the Python client told so (it answers NOT backed
// up with ON_FAILURE and never sends the call twice).
let service = null
let serviceTries = 0

function serviceAddress() {
  if (service) return service
  if (serviceTries >= 3 || !CLIENT || process.env.PREIMAGE_BIN
      || process.env.PREIMAGE_SUPERVISOR
      || /^(0|off|no|false)$/i.test(process.env.PREIMAGE_SERVICE || "")) return null
  serviceTries += 1
  try {
    const got = spawnSync(CLIENT, [PREIMAGE, "--service"], { encoding: "utf8", timeout: 5000 })
    if (got.status === 0) {
      const said = JSON.parse(got.stdout)
      if (typeof said.socket === "string" && said.socket) service = said
    }
  } catch (e) {}
  return service
}

// What a hook run said — exit code, stdout, stderr — as the hook's answer.
function answered(code, out, err) {
  if (code !== 0) return { failed: `${PREIMAGE} hook exited with ${code}: ${String(err || "").trim().slice(0, 500)}` }
  try {
    return JSON.parse(out || "{}")
  } catch (e) {
    return { failed: `${PREIMAGE} hook answered something that is not JSON: ${String(out).slice(0, 200)}` }
  }
}

function askService(where, text) {
  return new Promise((resolve) => {
    const env = {}
    for (const [k, v] of Object.entries(process.env))
      if (k && v !== undefined && k !== "PREIMAGE_OBSERVED_CALL") env[k] = v
    const body = Buffer.from(text, "utf8")
    const head = JSON.stringify({ v: 1, op: "hook", harness: "@@HARNESS@@", args: ARGS,
                                  cwd: process.cwd(), env, body: body.length }) + "\n"
    let buffered = Buffer.alloc(0)
    let accepted = false
    let done = false
    const sock = createConnection(where.socket)
    const finish = (result) => {
      if (done) return
      done = true
      sock.destroy()
      resolve(result)
    }
    const lost = (why) => finish(accepted ? { lost: why } : { unavailable: why })
    sock.setTimeout(where.connect_ms, () => lost("timed out"))
    sock.on("error", (e) => lost(e.message))
    sock.on("close", () => lost("it closed the connection"))
    sock.on("connect", () => {
      sock.setTimeout(where.accept_ms)
      sock.write(head)
      sock.write(body)
    })
    sock.on("data", (chunk) => {
      buffered = Buffer.concat([buffered, chunk])
      let nl
      while (!done && (nl = buffered.indexOf(10)) >= 0) {
        const line = buffered.subarray(0, nl).toString("utf8")
        buffered = buffered.subarray(nl + 1)
        let doc
        try { doc = JSON.parse(line) } catch (e) { lost("an unreadable reply"); return }
        if (!accepted) {
          if (doc.event !== "accepted") { finish({ unavailable: doc.error || "refused" }); return }
          accepted = true
          const deadline = (typeof doc.deadline === "number" && doc.deadline > 0 ? doc.deadline : 45)
          sock.setTimeout((deadline + where.answer_margin) * 1000)
        } else if (doc.event === "answer") {
          finish({ answer: doc })
        } else {
          lost(doc.error || "an answer without an event")
        }
      }
    })
  })
}

async function ask(payload) {
  const text = JSON.stringify(payload)
  const where = serviceAddress()
  if (where) {
    const got = await askService(where, text)
    if (got.answer) return answered(got.answer.exit_code || 0, got.answer.stdout, got.answer.stderr)
    if (got.lost) {
      return spawnAsk(text, [PREIMAGE, ["hook", "@@HARNESS@@", ...ARGS]],
                      { PREIMAGE_HOOK_FALLBACK: `lost the decision service stopped mid-call (${got.lost})`,
                        PREIMAGE_HOOK_SOCKET: where.socket })
    }
  }
  return spawnAsk(text, command(), {})
}

function spawnAsk(text, [program, argv], extra) {
  return new Promise((resolve) => {
    let out = ""
    let err = ""
    let child
    try {
      const env = Object.keys(extra).length ? { ...process.env, ...extra } : undefined
      child = spawn(program, argv, { stdio: ["pipe", "pipe", "pipe"], env })
    } catch (e) {
      resolve({ failed: `cannot run ${PREIMAGE}: ${e.message}` })
      return
    }
    child.on("error", (e) => resolve({ failed: `cannot run ${PREIMAGE}: ${e.message}` }))
    child.stdout.on("data", (d) => { out += d })
    child.stderr.on("data", (d) => { err += d })
    child.on("close", (code) => resolve(answered(code, out, err)))
    child.stdin.on("error", () => {})
    child.stdin.end(text)
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
    // the pre-call note (the backup, its targets, a rewrite, a failure), then the post-call
    // one when it names the undo the capture after the call allows
    const before = notes.get(input.callID)
    const after = answer.note || (answer.failed && `preimage: ${answer.failed}`)
    notes.delete(input.callID)
    const undo = after && after.includes("preimage undo") && !(before || "").includes("preimage undo")
    const note = before && undo ? `${before}\n${after}` : before || after
    if (!note) return
    if (mcp) output.content.push({ type: "text", text: note })
    else if (typeof output.output === "string") output.output += `\n\n${note}`
  },
})
