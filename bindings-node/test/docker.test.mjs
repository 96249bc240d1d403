// The docker provider (runc: tier container; runsc: tier kernel), embedded and
// behind a real plimsolld: snippets and projects, records verified, and an
// aborted signal removing the run's container. Needs the host
// .ci/setup-host.sh prepares; like the rest of the suite, it fails rather than
// skips without it.

import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { test } from 'node:test'

import plimsoll from '../index.js'
import { isCode, startDaemon } from './helpers.mjs'

const docker = (runtime, extra = {}) => ({ SANDBOX_PROVIDER: 'docker', SANDBOX_DOCKER_RUNTIME: runtime, SANDBOX_RATE_PER_MIN: '0', ...extra })
const TIERS = { runc: 'container', runsc: 'kernel' }

for (const runtime of ['runc', 'runsc']) {
  test(`${runtime}: a snippet and a project, records verified`, async () => {
    const e = await plimsoll.Engine.start(docker(runtime))
    const tier = TIERS[runtime]
    assert.equal(JSON.parse(await e.describe()).isolation, tier)
    const r = await e.runJavaScript('console.log(6*7)', { minimumIsolation: 'container' })
    assert.deepEqual([r.stdout.toString(), r.exitCode, r.isolation, r.sandbox], ['42\n', 0, tier, 'docker'])
    assert.equal(plimsoll.verifyRun(r.requestJson, r.responseJson).isolation, tier)
    const p = await e.runProject(
      { files: { 'main.js': "require('fs').writeFileSync('out.txt', 'hi'); console.log('p')" }, steps: ['node main.js', 'cat out.txt', 'exit 3', 'echo never'], artifacts: ['out.txt'] },
    )
    assert.equal(p.kind, 'project')
    assert.equal(p.outcome, 'completed')
    assert.deepEqual(p.steps.map((s) => [s.command, s.stdout.toString(), s.exitCode]), [['node main.js', 'p\n', 0], ['cat out.txt', 'hi', 0], ['exit 3', '', 3]])
    assert.deepEqual(p.artifacts.map((a) => [a.path, a.content.toString()]), [['out.txt', 'hi']])
    plimsoll.verifyRun(p.requestJson, p.responseJson)
    if (tier === 'container') await assert.rejects(e.runJavaScript('1', { minimumIsolation: 'kernel' }), isCode('insufficient_isolation'))
    else assert.equal((await e.runJavaScript('1', { minimumIsolation: 'kernel' })).isolation, 'kernel')
    await e.close()
  })
}

const containers = (instance) =>
  execFileSync('docker', ['ps', '-aq', '--filter', `label=io.plimsoll.instance=${instance}`], { encoding: 'utf8' }).split(/\s+/).filter(Boolean)
const sleep = (ms) => new Promise((done) => setTimeout(done, ms))

test('aborting the signal removes the run container', async () => {
  const instance = 'plimsoll:node-' + randomBytes(4).toString('hex')
  const e = await plimsoll.Engine.start(docker('runc', { PLIMSOLL_INSTANCE: instance }))
  const ac = new AbortController()
  const run = e.runJavaScript('setInterval(() => {}, 1000)', { timeoutMs: 60_000, signal: ac.signal })
  for (const deadline = Date.now() + 30_000; containers(instance).length === 0; await sleep(100)) {
    assert.ok(Date.now() < deadline, "the run's container never appeared")
  }
  ac.abort()
  await assert.rejects(run, (err) => err.name === 'AbortError' && err.code === 'cancelled')
  for (const deadline = Date.now() + 15_000; containers(instance).length > 0; await sleep(100)) {
    assert.ok(Date.now() < deadline, "the aborted run's container is still there")
  }
})

test('a remote docker daemon: snippet and project verified by the client', async (t) => {
  const d = await startDaemon({ ...docker('runc'), PLIMSOLL_INSECURE: '1' })
  t.after(() => d.stop())
  const c = new plimsoll.Client(d.url)
  const r = await c.runJavaScript('console.log(6*7)')
  assert.deepEqual([r.stdout.toString(), r.isolation], ['42\n', 'container'])
  const p = await c.runProject({ files: { 'a.txt': 'x' }, steps: ['cat a.txt', 'echo done'] })
  assert.deepEqual(p.steps.map((s) => s.stdout.toString()), ['x', 'done\n'])
  const tampered = JSON.parse(p.responseJson)
  tampered.project.steps[0].stdout = Buffer.from('y').toString('base64')
  assert.throws(() => plimsoll.verifyRun(p.requestJson, JSON.stringify(tampered)), isCode('record_mismatch'))
})
