/** Schema helpers shared by the kinds' value schemas. Units: times ms epoch, power W, energy Wh, shares in [0, 1]. */
import { Type } from '@sinclair/typebox';

export const strict = { additionalProperties: false } as const;
export const Share = (description: string) => Type.Number({ minimum: 0, maximum: 1, description });
export const NonNeg = (description: string) => Type.Number({ minimum: 0, description });
export const Ms = (description: string) => Type.Integer({ minimum: 0, description });
