import type {
  DescribeImageRequest,
  GenerateResult,
  ImageDescription,
  JsonSchema,
  LlmClient,
  SharedLimits,
  VisionClient,
} from './types.js';

export const IMAGE_DESCRIPTION_SCHEMA: JsonSchema = {
  type: 'object',
  properties: {
    description: { type: 'string', minLength: 1 },
    contents: {
      type: 'array',
      items: { type: 'string', enum: ['diagram', 'table', 'photo', 'chart', 'screenshot', 'text', 'other'] },
    },
    visibleText: { type: 'string' },
  },
  required: ['description', 'contents', 'visibleText'],
  additionalProperties: false,
};

/** A vision model is an LLM that gets an image with the prompt; the answer is structured like every other. */
export class StructuredVisionClient implements VisionClient {
  constructor(private readonly llm: LlmClient) {}

  get provider() {
    return this.llm.provider;
  }

  get model() {
    return this.llm.model;
  }

  withLimits(limits: Partial<SharedLimits>): VisionClient {
    this.llm.withLimits(limits);
    return this;
  }

  describe(request: DescribeImageRequest): Promise<GenerateResult<ImageDescription>> {
    return this.llm.generate<ImageDescription>({
      system: request.system,
      prompt: request.prompt,
      schema: IMAGE_DESCRIPTION_SCHEMA,
      schemaName: 'image_description',
      images: [request.image],
      maxTokens: request.maxTokens ?? 1500,
      maxRetries: request.maxRetries,
      signal: request.signal,
    });
  }
}
