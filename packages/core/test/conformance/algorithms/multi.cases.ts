/** Multi-policy scenarios: now in the published kit (src/testing/scenarios/multi.ts). */
export { multiPolicyScenarios } from '../../../src/testing/scenarios/multi';
