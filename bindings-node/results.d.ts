// Generated from plimsoll-core's data model (plimsoll-core/src/view); do not edit.
// Regenerate: PLIMSOLL_BLESS=1 cargo test -p plimsoll-core --lib view

/** A run record (version 4): digests of what was asked and what came back, the evidence, the times, and in a session the chain. It is not a signature. */
export interface RunRecord {
  /** Record version (4). */
  version: number
  /** Digest of the request as sent. */
  requestSha256: string
  /** Digest of the result; empty on an unanswered record. */
  resultSha256: string
  /** The provider. */
  provider: string
  /** The tier that ran. */
  isolation: string
  /** The content-addressed environment, or empty. */
  environment: string
  /** The provider's policy digest, then `;wall=sha256:…` (the wall identity: the digest of every part that holds the wall up), then `;accepted=CVE-…` when the operator accepted advisories that apply, then `;sandbox=warm-pool` for a pooled sandbox; empty for the disabled provider. */
  policy: string
  /** Start, Unix ms. */
  startedUnixMs: number
  /** End, Unix ms. */
  endedUnixMs: number
  /** The session fingerprint, or empty. */
  session: string
  /** The call's place in its session (1-based), 0 for a single run. */
  sequence: number
  /** The previous call's record digest, or empty. */
  previousSha256: string
  /** This record's digest. */
  recordSha256: string
  /** The software that ran. */
  softwareIdentity: string
  /** The id of the caller's software rule, or empty. */
  softwareRuleId: string
  /** On an unanswered session call: the error's Connect code. */
  unanswered: string
  /** The daemon instance reference. */
  instance: string
}

/** Whatever ran: evidence, record, and the exact wire JSON of the request sent and the answer received. */
export interface RunResult {
  /** `javascript`, `project`, `module` or `cell`. */
  kind: string
  /** The provider that ran it. */
  sandbox: string
  /** The tier that ran it: configuration plus startup proof, never attestation. */
  isolation: string
  /** The content-addressed environment, or empty. */
  environment: string
  /** The software identity, or empty. */
  softwareIdentity: string
  /** The instance reference. */
  instance: string
  /** Wall time, ms (not digested). */
  durationMs: number
  /** The run record. */
  record?: RunRecord
  /** The run record as plimsoll.v1 JSON. */
  recordJson?: string
  /** Where its time went, as JSON: `{"source":"fresh","phases":[{"phase":"admitted","ms":0.04},…]}`, monotonic milliseconds per phase (admitted, acquired, started, running, collected, cleaned_up) and where the sandbox came from (`fresh`, `snippet_pool`, `session_pool`, `session`); absent when the answer does not say. */
  phasesJson?: string
  /** For a session call: why the session ended during or after it. */
  sessionEnd?: string
  /** The request as sent, in plimsoll.v1 JSON (for verify_run and Chain). */
  requestJson: string
  /** The answer, in plimsoll.v1 JSON. */
  responseJson: string
}

/** What a JavaScript snippet did. A non-zero exit is a result, not an error. */
export interface JavaScriptResult extends RunResult {
  /** The payload kind. */
  kind: 'javascript'
  /** Standard output as kept. */
  stdout: Buffer
  /** Standard error as kept. */
  stderr: Buffer
  /** The exit code; 124 when the deadline ended it. */
  exitCode: number
  /** The deadline ended it. */
  timedOut: boolean
  /** Standard output was cut at the cap. */
  stdoutTruncated: boolean
  /** Standard error was cut at the cap. */
  stderrTruncated: boolean
}

/** What a notebook cell did. */
export interface CellResult extends RunResult {
  /** The payload kind. */
  kind: 'cell'
  /** Standard output (the last expression's value is printed here). */
  stdout: Buffer
  /** Standard error. */
  stderr: Buffer
  /** 0 ran, 1 raised, 124 deadline. */
  exitCode: number
  /** The deadline ended it (and its interpreter). */
  timedOut: boolean
  /** Standard output was cut at the cap. */
  stdoutTruncated: boolean
  /** Standard error was cut at the cap. */
  stderrTruncated: boolean
  /** The call began with a fresh interpreter: nothing defined earlier exists. */
  interpreterStarted: boolean
  /** The interpreter ended during or after this call. */
  interpreterEnded: boolean
}

/** One project step that ran. */
export interface Step {
  /** The command as sent. */
  command: string
  /** Standard output as kept. */
  stdout: Buffer
  /** Standard error as kept. */
  stderr: Buffer
  /** The exit code; 124 on a deadline. */
  exitCode: number
  /** A deadline ended it. */
  timedOut: boolean
  /** Wall time, ms. */
  durationMs: number
  /** Standard output was cut at the cap. */
  stdoutTruncated: boolean
  /** Standard error was cut at the cap. */
  stderrTruncated: boolean
}

/** One collected artifact. */
export interface Artifact {
  /** Its path under the project, as asked for. */
  path: string
  /** Its content. */
  content: Buffer
}

/** What a project did. */
export interface ProjectResult extends RunResult {
  /** The payload kind. */
  kind: 'project'
  /** How the run concluded: `completed`, `setup_failed`, `timed_out`, `protocol_error`, `runner_failed`. */
  outcome: string
  /** Human context for the outcome. */
  outcomeDetail: string
  /** One per step that ran. */
  steps: Array<Step>
  /** Collected artifacts, in the order returned. */
  artifacts: Array<Artifact>
  /** Some artifacts were dropped at the cap. */
  artifactsTruncated: boolean
}

/** One module row's result. */
export interface ModuleRow {
  /** The row's status (0 ran). */
  status: number
  /** Its outputs. */
  outputs: Array<number>
}

/** What a module run did. */
export interface ModuleResult extends RunResult {
  /** The payload kind. */
  kind: 'module'
  /** How the run concluded. */
  outcome: string
  /** Human context. */
  outcomeDetail: string
  /** Output width. */
  width: number
  /** One per row. */
  runs: Array<ModuleRow>
  /** Standard output. */
  stdout: Buffer
  /** Standard error. */
  stderr: Buffer
}

/** A closed session's summary, as the core checked it. */
export interface SessionSummary {
  /** The session fingerprint. */
  session: string
  /** Calls executed. */
  calls: number
  /** The last record's digest, or empty. */
  lastRecordSha256: string
  /** `closed`, or the earlier end. */
  ended: string
}

/** A result of whichever kind ran. */
export type AnyResult = JavaScriptResult | ProjectResult | CellResult | ModuleResult
