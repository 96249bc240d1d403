// In the consumer container: require('plimsoll') runs a snippet embedded and
// against the plimsolld image, with typed errors.
const assert = require('node:assert/strict')
const plimsoll = require('plimsoll')

;(async () => {
  const engine = await plimsoll.Engine.start({ SANDBOX_PROVIDER: 'wasm' })
  const r = await engine.runJavaScript('console.log(6*7)', { minimumIsolation: 'process' })
  assert.equal(r.stdout.toString(), '42\n')
  assert.equal(r.isolation, 'process')
  plimsoll.verifyRun(r.requestJson, r.responseJson)
  await assert.rejects(engine.runJavaScript('1', { minimumIsolation: 'kernel' }), (e) => e instanceof plimsoll.InsufficientIsolationError && e instanceof plimsoll.PlimsollError)
  await engine.close()
  console.log('node (require) embedded: 42 on process, record verified, floor refused with InsufficientIsolationError')
  const client = new plimsoll.Client(process.env.PLIMSOLL_URL, { token: process.env.PLIMSOLL_TOKEN })
  const remote = await client.runJavaScript('console.log(6*7)', { minimumIsolation: 'process' })
  assert.equal(remote.stdout.toString(), '42\n')
  await client.close()
  console.log(`node (require) remote: 42 from plimsolld at ${process.env.PLIMSOLL_URL}`)
})().catch((e) => {
  console.error(e)
  process.exit(1)
})
