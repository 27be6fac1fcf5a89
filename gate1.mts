import { benchGateRejects, benchVerify, describeRequestCpu } from './bench/gates.js';
const v = benchVerify();
const r = await benchGateRejects(Number(process.env.P ?? 1), 'raw');
console.log(Math.round(r.perSecond), 'verify', Math.round(v.perSecond), 'ratio', (r.perSecond / v.perSecond).toFixed(2), describeRequestCpu(r.cpu), JSON.stringify(r.statusCounts));
