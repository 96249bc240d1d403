// Types for `import … from 'plimsoll'` (index.mjs): the same as index.d.ts.
export * from './index.js'
import * as plimsoll from './index.js'
export default plimsoll
