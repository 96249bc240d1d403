// The embedded engine on the wasm provider: real snippets, records verified,
// refusals before dispatch, AbortSignal cancelling a run.

import assert from 'node:assert/strict'
import { before, test } from 'node:test'

import plimsoll from '../index.js'
import { isCode, WASM } from './helpers.mjs'

let engine
before(async () => {
  engine = await plimsoll.Engine.start(WASM)
})

test('describe paints the proven tier', async () => {
  const d = JSON.parse(await engine.describe())
  assert.equal(d.sandbox, 'wasm')
  assert.equal(d.isolation, 'process')
  assert.equal(d.protocol, plimsoll.PROTOCOL)
  assert.match(d.javascriptEnvironment.softwareIdentity, /^quickjs-ng:/)
})

test('a snippet runs and its record verifies', async () => {
  const r = await engine.runJavaScript('console.log(6*7)')
  assert.equal(r.kind, 'javascript')
  assert.ok(Buffer.isBuffer(r.stdout))
  assert.equal(r.stdout.toString(), '42\n')
  assert.equal(r.stderr.length, 0)
  assert.equal(r.exitCode, 0)
  assert.equal(r.timedOut, false)
  assert.equal(r.isolation, 'process')
  assert.equal(r.sandbox, 'wasm')
  assert.equal(r.record.version, 4)
  assert.equal(r.record.isolation, 'process')
  assert.equal(r.record.sequence, 0)
  const checked = plimsoll.verifyRun(r.requestJson, r.responseJson)
  assert.equal(checked.recordSha256, r.record.recordSha256)
  // Where its time went: the same phases the answer's JSON carries.
  const phases = JSON.parse(r.phasesJson)
  assert.deepEqual(phases, JSON.parse(r.responseJson).phases)
  const names = phases.phases.map((p) => p.phase)
  assert.equal(names[0], 'admitted')
  assert.ok(names.includes('running'), names)
  const tampered = JSON.parse(r.responseJson)
  tampered.javascript.stdout = Buffer.from('43\n').toString('base64')
  assert.throws(() => plimsoll.verifyRun(r.requestJson, JSON.stringify(tampered)), isCode('record_mismatch'))
})

test('a non-zero exit and a deadline are results', async () => {
  let r = await engine.runJavaScript("console.error('boom'); process.exit(3)")
  assert.equal(r.exitCode, 3)
  assert.match(r.stderr.toString(), /boom/)
  r = await engine.runJavaScript('while (true) {}', { timeoutMs: 300 })
  assert.deepEqual([r.exitCode, r.timedOut], [124, true])
})

test('floor, software rule and unsupported kinds are refused before dispatch', async () => {
  assert.equal((await engine.runJavaScript('1', { minimumIsolation: 'process' })).isolation, 'process')
  await assert.rejects(engine.runJavaScript('1', { minimumIsolation: 'container' }), (e) => isCode('insufficient_isolation')(e) && e.notDispatched === 'isolation')
  const identity = JSON.parse(await engine.describe()).javascriptEnvironment.softwareIdentity
  const r = await engine.runJavaScript('1', { softwareRule: { mode: 'exact', identities: [identity] } })
  assert.equal(r.record.softwareRuleId, 'exact:' + identity)
  plimsoll.verifyRun(r.requestJson, r.responseJson)
  await assert.rejects(engine.runJavaScript('1', { softwareRule: { mode: 'exact', identities: ['quickjs-ng:other'] } }), (e) => isCode('software_mismatch')(e) && e.notDispatched === 'environment')
  await assert.rejects(engine.runProject({ files: { 'a.js': '1' }, steps: ['node a.js'] }), (e) => isCode('unsupported')(e) && e.notDispatched === 'unsupported')
  await assert.rejects(engine.openSession(), isCode('unsupported'))
})

test('a rate limit sheds with at_capacity', async () => {
  const e = await plimsoll.Engine.start({ SANDBOX_PROVIDER: 'wasm', SANDBOX_RATE_PER_MIN: '1' })
  await e.runJavaScript('1')
  await assert.rejects(e.runJavaScript('1'), (err) => isCode('at_capacity')(err) && err.notDispatched === 'capacity')
})

async function nextRunGetsTheSlot(runner) {
  const deadline = Date.now() + 5000
  for (;;) {
    try {
      const r = await runner.runJavaScript('console.log(3)')
      assert.equal(r.stdout.toString(), '3\n')
      return
    } catch (e) {
      if (e.code !== 'at_capacity' || Date.now() > deadline) throw e
      await new Promise((done) => setTimeout(done, 50))
    }
  }
}

test('aborting the signal cancels the run', async () => {
  const e = await plimsoll.Engine.start({ ...WASM, SANDBOX_MAX_CONCURRENT: '1' })
  const t0 = Date.now()
  await assert.rejects(e.runJavaScript('while (true) {}', { timeoutMs: 30_000, signal: AbortSignal.timeout(300) }), (err) => err.name === 'AbortError' && err.code === 'cancelled')
  assert.ok(Date.now() - t0 < 5000, `took ${Date.now() - t0} ms`)
  await nextRunGetsTheSlot(e)
})

test('concurrent runs', async () => {
  const rs = await Promise.all([0, 1, 2, 3].map((i) => engine.runJavaScript(`console.log(${i}*2)`)))
  assert.deepEqual(rs.map((r) => r.stdout.toString()), ['0\n', '2\n', '4\n', '6\n'])
})

test('runJson', async () => {
  const r = await engine.runJson(JSON.stringify({ protocol: 4, javascript: { code: "console.log('j')" } }))
  assert.equal(r.kind, 'javascript')
  assert.equal(r.stdout.toString(), 'j\n')
})

