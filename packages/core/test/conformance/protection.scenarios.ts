/** Refunds, lockouts and blocks: now in the published kit (src/testing/scenarios). */
export {
  lockoutScenarios,
  mixedProtectionScenarios,
} from '../../src/testing/scenarios/protection';
export { refundScenarios } from '../../src/testing/scenarios/refunds';
