// Type-checked usage of the public API against the committed index.d.ts
// (`npm run typecheck`). Compiled with --noEmit, never run.

import { Chain, Client, Engine, errorCodes, verifyRun } from '../index.js'
import type { CellResult, JavaScriptResult, ProjectResult, RunRecord, SessionSummary, SoftwareRule } from '../index.js'

export async function usage(): Promise<number> {
  const rule: SoftwareRule = { mode: 'exact', identities: ['quickjs-ng:x'] }
  const engine: Engine = await Engine.start({ SANDBOX_PROVIDER: 'wasm' })
  const info = JSON.parse(await engine.describe()) as { isolation: string }
  const ac = new AbortController()
  const r: JavaScriptResult = await engine.runJavaScript('console.log(6*7)', {
    minimumIsolation: 'process',
    timeoutMs: 1000,
    softwareRule: rule,
    signal: ac.signal,
  })
  const out: string = r.stdout.toString()
  const rec: RunRecord | undefined = r.record
  const checked: RunRecord = verifyRun(r.requestJson, r.responseJson)
  const p: ProjectResult = await engine.runProject({ files: { 'main.js': 'console.log(1)' }, steps: ['node main.js'], artifacts: ['out.txt'] })
  for (const s of p.steps) void s.stdout.length
  const any = await engine.runJson('{"protocol":4,"javascript":{"code":"1"}}')
  if (any.kind === 'javascript') void any.exitCode
  const client = new Client('http://127.0.0.1:8746', { token: 'x'.repeat(40), insecureHttp: false, timeoutMs: 30_000 })
  const session = await client.openSession({ languages: ['python'], lifetimeMs: 60_000 })
  const cell: CellResult = await session.runCell('python', '1+1', { files: { 'a.txt': 'x' } })
  const summary: SessionSummary = await session.close()
  new Chain(session.fingerprint).checkClose(summary.session, summary.calls, summary.lastRecordSha256)
  try {
    await client.runJavaScript('1')
  } catch (e) {
    const err = e as Error & { code: string; notDispatched: string | null }
    void err.code
  }
  await engine.close()
  return out.length + (rec?.sequence ?? 0) + checked.version + cell.exitCode + errorCodes().length + info.isolation.length
}
