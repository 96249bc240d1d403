// Appends the result types rendered from plimsoll-core's data model
// (results.d.ts, kept in step by the core's tests) to the native.d.ts that
// `napi build` generated, so the package's one declaration file has them.
import { readFileSync, writeFileSync } from 'node:fs'

const here = new URL('.', import.meta.url)
const index = new URL('native.d.ts', here)
const results = readFileSync(new URL('results.d.ts', here), 'utf8')
const generated = readFileSync(index, 'utf8')
const marker = '\n// ---- result types (results.d.ts)\n'
const head = generated.split(marker)[0].trimEnd()
writeFileSync(index, `${head}\n${marker}${results}`)
