// Sessions on the docker provider (runc and runsc): cells that keep state,
// snippets and projects in one sandbox, every call's record chained and the
// chain verified from the JSON the binding hands out, embedded and behind a
// real plimsolld.

import assert from 'node:assert/strict'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'

import plimsoll from '../index.js'
import { ROOT, isCode, startDaemon } from './helpers.mjs'

const env = (runtime) => ({ SANDBOX_PROVIDER: 'docker', SANDBOX_DOCKER_RUNTIME: runtime, SANDBOX_RATE_PER_MIN: '0', SANDBOX_MAX_SESSIONS: '2' })

async function exercise(s) {
  const out = []
  out.push(await s.runCell('python', 'x = 41'))
  let r = await s.runCell('python', 'print(x + 1)')
  assert.deepEqual([r.stdout.toString(), r.exitCode, r.kind], ['42\n', 0, 'cell'])
  out.push(r)
  r = await s.runCell('javascript', 'let y = 6; console.log(y * 7)')
  assert.equal(r.stdout.toString(), '42\n')
  out.push(r)
  r = await s.runCell('python', "print(open('data.txt').read())", { files: { 'data.txt': 'from a file' } })
  assert.equal(r.stdout.toString(), 'from a file\n')
  out.push(r)
  const j = await s.runJavaScript("console.log(require('fs').readFileSync('data.txt', 'utf8'))")
  assert.equal(j.stdout.toString(), 'from a file\n')
  out.push(j)
  const p = await s.runProject({ steps: ['cat data.txt'] })
  assert.equal(p.steps[0].stdout.toString(), 'from a file')
  out.push(p)
  return out
}

function verifyChain(fingerprint, results, summary) {
  const chain = new plimsoll.Chain(fingerprint)
  results.forEach((r, i) => {
    const rec = chain.checkCall(r.requestJson, r.responseJson)
    assert.equal(rec.sequence, i + 1)
    assert.equal(rec.session, fingerprint)
  })
  chain.checkClose(summary.session, summary.calls, summary.lastRecordSha256)
  assert.equal(summary.calls, results.length)
  assert.equal(summary.ended, 'closed')
}

for (const runtime of ['runc', 'runsc']) {
  test(`${runtime}: an embedded session chains every call`, async () => {
    const e = await plimsoll.Engine.start(env(runtime))
    const tier = JSON.parse(await e.describe()).isolation
    const s = await e.openSession({ minimumIsolation: 'container', languages: ['python'] })
    assert.equal(s.isolation, tier)
    assert.equal(s.fingerprint.length, 64)
    const results = await exercise(s)
    const summary = await s.close()
    verifyChain(s.fingerprint, results, summary)
    await assert.rejects(s.runCell('python', '1'), (err) => isCode('session_ended')(err) && err.notDispatched === 'request' && err.sessionEnd === 'closed')
    await assert.rejects(s.close(), isCode('session_ended'))
    const t = JSON.parse(results[0].responseJson)
    t.cell.stdout = Buffer.from('tampered').toString('base64')
    assert.throws(() => new plimsoll.Chain(s.fingerprint).checkCall(results[0].requestJson, JSON.stringify(t)), isCode('record_mismatch'))
    await e.close()
  })
}

test('a remote session', async (t) => {
  const d = await startDaemon({ ...env('runc'), PLIMSOLL_INSECURE: '1' })
  t.after(() => d.stop())
  const c = new plimsoll.Client(d.url)
  assert.ok(JSON.parse(await c.describe()).supportsSessions)
  const s = await c.openSession({ languages: ['python'] })
  assert.equal(s.isolation, 'container')
  const results = await exercise(s) // the core's RemoteSession checks each call's chain link
  const summary = await s.close() // and the close summary against the chain it saw
  verifyChain(s.fingerprint, results, summary)
  await assert.rejects(s.runCell('python', '1'), isCode('session_ended'))
})

/** Sends the shared session calls (tests/vectors/sessions.json), checks every
 *  want, and gives the line per call the other languages must match. */
async function sessionVectors(runner) {
  const identity = JSON.parse(await runner.describe()).sessionEnvironment.softwareIdentity
  const text = readFileSync(join(ROOT, 'tests', 'vectors', 'sessions.json'), 'utf8')
  const v = JSON.parse(text.replaceAll('$IDENTITY', identity))
  const s = await runner.openSession({ minimumIsolation: v.open.minimumIsolation, softwareRule: v.open.softwareRule })
  const lines = []
  for (const c of v.calls) {
    let line
    try {
      const r = await s.runJson(JSON.stringify(c.request))
      const floor = JSON.parse(r.requestJson).minimumIsolation ?? ''
      line = [c.name, 'ok', r.record.requestSha256, floor, r.record.softwareRuleId]
    } catch (err) {
      if (typeof err?.code !== 'string') throw err
      line = [c.name, err.code, '', '', '']
    }
    assert.equal(line[1], c.want.error ?? 'ok', c.name)
    assert.equal(line[3], c.want.minimumIsolation ?? line[3], c.name)
    assert.equal(line[4], c.want.softwareRuleId ?? line[4], c.name)
    lines.push(line.join('\t'))
  }
  await s.close()
  return lines.join('\n') + '\n'
}

test('the shared session calls, embedded and remote', async (t) => {
  const e = await plimsoll.Engine.start(env('runc'))
  const embedded = await sessionVectors(e)
  await e.close()
  const d = await startDaemon({ ...env('runc'), PLIMSOLL_INSECURE: '1' })
  t.after(() => d.stop())
  const remote = await sessionVectors(new plimsoll.Client(d.url))
  assert.equal(embedded, remote)
  const out = process.env.PLIMSOLL_SESSION_VECTORS_OUT
  if (out) {
    writeFileSync(join(out, 'node-embedded.tsv'), embedded)
    writeFileSync(join(out, 'node-remote.tsv'), remote)
  }
})
