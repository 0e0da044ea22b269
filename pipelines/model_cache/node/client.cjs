// The official OpenAI Node.js client through cairn's model cache: chat,
// completions with logprobs, embeddings and streaming. Writes each answer's
// raw body, and what the client parsed, to the file named by argv[2].
// The client reads its base URL from OPENAI_BASE_URL, which cairn sets.
const fs = require("fs");
const { OpenAI } = require("openai");

const client = new OpenAI({ apiKey: "unused", maxRetries: 0 });
const model = process.env.MODEL || "sim-model";
const raw = async (p) => (await p.asResponse()).text();

(async () => {
  const chat = { model, messages: [{ role: "user", content: "What is 6 * 7?" }], temperature: 0 };
  const out = {
    base_url: client.baseURL,
    chat: await raw(client.chat.completions.create(chat)),
    completions: await raw(client.completions.create({ model, prompt: "The answer is", max_tokens: 4, logprobs: 1, echo: true, temperature: 0 })),
    embeddings: await raw(client.embeddings.create({ model, input: ["alpha", "beta"], encoding_format: "float" })),
    chat_stream: await raw(client.chat.completions.create({ ...chat, stream: true })),
  };
  let text = "";
  for await (const ch of await client.chat.completions.create({ ...chat, messages: [{ role: "user", content: "tell me more" }], stream: true })) {
    text += ch.choices[0]?.delta?.content ?? "";
  }
  out.chat_stream_text = text;
  text = "";
  for await (const ch of await client.completions.create({ model, prompt: "Once upon", max_tokens: 6, stream: true, temperature: 0 })) {
    text += ch.choices[0]?.text ?? "";
  }
  out.completions_stream_text = text;
  const emb = await client.embeddings.create({ model, input: "gamma", encoding_format: "float" });
  out.embedding_dims = emb.data[0].embedding.length;
  const lp = await client.completions.create({ model, prompt: "Hi", max_tokens: 2, logprobs: 1, temperature: 0 });
  out.logprobs_tokens = lp.choices[0].logprobs.tokens;
  // n = 5 samples at temperature 1, no seed: 5 requests, 5 answers, the
  // same 5 in the same order on replay.
  out.samples = [];
  for (let i = 0; i < 5; i++) {
    const r = await client.chat.completions.create({ model, messages: [{ role: "user", content: "write a line of verse" }], temperature: 1 });
    out.samples.push(r.choices[0].message.content);
  }
  fs.writeFileSync(process.argv[2], JSON.stringify(out, null, 1) + "\n");
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
