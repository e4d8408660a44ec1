/** The shared HTTP scenario table (@floodgate/http-test-kit) on Express 5 and Express 4, on every store. */
import { describeHttpScenarios, frameworksOf } from '@floodgate/http-test-kit';

describeHttpScenarios(frameworksOf('express'));
