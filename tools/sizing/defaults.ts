/** The region the sizing assumes unless told: the one `npm run infra:build` compiles for (a 40,000 requests/s region). */
export const DEFAULT_REGION = 'swedencentral';
