/** The Location rewrite lives in shared/ since the credential sets' path prefixes use it too. */
export { createLocationRewrite } from '../shared/location-rewrite.js';
