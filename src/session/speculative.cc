#include "session/speculative.h"

#include <algorithm>
#include <deque>
#include <optional>
#include <utility>

namespace g4 {
namespace {

// The noise streams of the classic rule (DrawFrom's stream 0 draws the tokens themselves).
constexpr uint64_t kResidualStream = 1, kAcceptStream = 2;

// The index-th draw from the normalised max(0, p - q); from p when the residual is empty.
int SampleResidual(const std::vector<float>& p, const std::vector<float>& q, uint64_t seed, uint64_t index) {
  std::vector<float> r(p.size());
  double sum = 0.0;
  for (size_t i = 0; i < p.size(); ++i) sum += (r[i] = std::max(0.0f, p[i] - q[i]));
  if (sum <= 0.0) return DrawFrom(p, seed, index, kResidualStream);
  for (float& v : r) v = static_cast<float>(v / sum);
  return DrawFrom(r, seed, index, kResidualStream);
}

}  // namespace

Status RecordGreedyRound(Model& target, Assistant& assistant, KvCache& cache, F32 state, F32 spare,
                         const GreedyRoundSlots& slots, int nd) {
  const int64_t p = cache.length();
  F32 s_in = state, s_out = spare;
  for (int j = 0; j < nd; ++j) {
    G4_RETURN_IF_ERROR(assistant.DraftGreedyOnDevice(slots.tokens.At(j), s_in, p, cache, slots.tokens.At(j + 1), s_out));
    std::swap(s_in, s_out);
  }
  G4_RETURN_IF_ERROR(target.ForwardArgmaxOnDevice(slots.tokens, nd + 1, cache, nd + 1, slots.target));
  target.backend().AcceptDrafts(slots.verdict, slots.tokens.At(1), slots.target, nd);
  return Status::Ok();
}

Result<GenerationResult> GenerateSpeculative(Model& target, Assistant& assistant, std::span<const int32_t> prompt,
                                             const GenerateOptions& options, int draft_tokens,
                                             const std::function<void(int)>& on_token) {
  return GenerateSpeculative(target, assistant, prompt, options, SpeculativeOptions{draft_tokens, DraftPolicyKind::kFixed},
                             on_token);
}

Result<GenerationResult> GenerateSpeculative(Model& target, Assistant& assistant, std::span<const int32_t> prompt,
                                             const GenerateOptions& options, const SpeculativeOptions& speculative,
                                             const std::function<void(int)>& on_token) {
  const int k = speculative.max_drafts;
  if (prompt.empty()) return InvalidArgument("generate: the prompt is empty");
  if (options.max_new_tokens < 0) return InvalidArgument("generate: max_new_tokens must be >= 0");
  if (k < 1 || k > kMaxDraftTokens) {
    return InvalidArgument("generate: draft tokens must be in 1.." + std::to_string(kMaxDraftTokens));
  }
  G4_RETURN_IF_ERROR(ValidateSamplerOptions(options.sampler));
  const std::vector<int>& stops = options.stop_ids.empty() ? target.config().eos_ids : options.stop_ids;
  auto is_stop = [&](int t) { return std::find(stops.begin(), stops.end(), t) != stops.end(); };
  const bool greedy = options.sampler.temperature == 0.0f;
  const Sampler sampler(options.sampler);

  GenerationResult result;
  result.stop_reason = "length";
  GenerationStats& st = result.stats;
  st.prompt_tokens = static_cast<int>(prompt.size());
  st.accepted_per_position.assign(k, 0);
  st.rounds_per_k.assign(k + 1, 0);
  if (options.max_new_tokens == 0) return result;
  DraftPolicy policy(k, speculative.policy);
  const std::function<int64_t()> cost_clock = speculative.clock ? speculative.clock : MonotonicMicros;

  Backend& be = target.backend();
  const int H = target.config().hidden, V = target.config().vocab;
  const int64_t max_positions = static_cast<int64_t>(prompt.size()) + options.max_new_tokens + k + 1;
  G4_ASSIGN_OR_RETURN(std::unique_ptr<KvCache> cache, target.NewCache(max_positions, k + 1, assistant.SlidingKeep()));
  // The seed state lives in A; draft steps alternate between A and B.
  G4_ASSIGN_OR_RETURN(auto state_a, be.Allocate(H * sizeof(float)));
  G4_ASSIGN_OR_RETURN(auto state_b, be.Allocate(H * sizeof(float)));
  const F32 state{state_a.get(), 0};

  // Greedy rounds without recorded logits run on the backend: [seed, drafts], the target's
  // tokens for them and the verdict (m, bonus) live in `round_buf`, and a round is recorded as
  // one batch and read back once. The seed of the next round is copied there on the backend.
  G4_ASSIGN_OR_RETURN(auto round_buf, be.Allocate(GreedyRoundSlots::Count(k) * sizeof(float)));
  const GreedyRoundSlots slots(F32{round_buf.get(), 0}, k);
  std::vector<float> round_host(GreedyRoundSlots::Count(k));
  std::vector<float> logits, draft_logits;
  // Emits a token chosen by `row` of the last target logits; kNotFinite (from logits that are
  // not finite, on the backend or here) stops generation: the e-th token comes from the logits
  // at position prompt + e - 1.
  auto emit = [&](int t, size_t row) -> Status {
    if (t < 0) return NotFiniteLogits(static_cast<int64_t>(prompt.size() + result.tokens.size()) - 1);
    result.tokens.push_back(t);
    if (options.top_logits > 0) {
      result.top_logits.push_back(TopK(std::span<const float>(&logits[row * V], V), options.top_logits));
    }
    if (on_token) on_token(t);
    return Status::Ok();
  };
  // The choice from a row of logits for the index-th generated token (greedy, or drawn with that
  // index's noise: see Sampler); kNotFinite when the row is not finite. Greedy and repeatable
  // sampling accept a draft exactly when it equals the target's choice for its index (drawn with
  // the same noise), so the tokens are plain decoding's, drafts or not; else the classic rule.
  auto choose = [&](std::span<const float> row, size_t index) { return sampler.Sample(row, index); };
  const bool coupled = greedy || options.sampler.repeatable;

  // Greedy rounds without recorded logits read back token ids only (argmax on the backend).
  const bool ids_only = greedy && options.top_logits == 0;
  std::vector<int> ids;
  const int64_t t0_us = MonotonicMicros();
  int seed;
  G4_ASSIGN_OR_RETURN(std::span<const int32_t> tail, target.PrefillHead(prompt, *cache));
  if (ids_only) {
    G4_RETURN_IF_ERROR(target.ForwardArgmax(tail, *cache, 1, &ids));
    seed = ids[0];
  } else {
    G4_RETURN_IF_ERROR(target.Forward(tail, *cache, 1, &logits));
    seed = choose(logits, 0);
  }
  const int64_t t1_us = MonotonicMicros();
  st.prefill_us = t1_us - t0_us;
  be.Copy(state, target.hidden_rows().At(static_cast<size_t>(tail.size() - 1) * H), H);
  if (ids_only) {
    const float f = static_cast<float>(seed);
    G4_RETURN_IF_ERROR(be.Upload(*round_buf, 0, &f, sizeof(f)));
  }
  G4_RETURN_IF_ERROR(emit(seed, 0));
  bool done = is_stop(seed);
  if (done) result.stop_reason = "eos";
  // An interruption is honoured after the tokens of a round are out (they are already decided).
  auto interrupted = [&] {
    if (done || !options.interrupted || !options.interrupted()) return false;
    result.stop_reason = "interrupted";
    return done = true;
  };
  interrupted();

  // Counts a round of nd drafts with m accepted.
  auto count = [&](const RoundTrace& round, int nd, int m) {
    st.rounds++;
    st.drafted += nd;
    st.accepted += m;
    st.accepted_per_round.push_back(m);
    st.drafted_per_round.push_back(nd);
    st.rounds_per_k[nd]++;
    for (int j = 0; j < m; ++j) st.accepted_per_position[j]++;
    result.rounds.push_back(round);
    if (options.on_round) options.on_round(nd, m);
  };
  // Greedy plain steps on the backend, as plain decoding runs them: each step embeds the id the
  // one before left in a round slot (0 and 1 in turn), and where the backend's reads overlap its
  // work the next step is recorded before this one's id is read. Each step counts as a round of
  // no drafts; the policy gets the time spent waiting and recording (not emitting).
  const int ahead = be.DownloadsOverlap() ? StepsAhead(options.decode_ahead, be) : 0;
  const bool overlap = ahead > 0;
  auto plain_steps = [&](int n) -> Status {
    std::deque<std::unique_ptr<PendingDownload>> reads;
    int started = 0, finished = 0;
    double busy_us = 0.0;
    while (finished < n && !done) {
      const int64_t t0 = cost_clock();
      while (started < n && started - finished <= ahead) {
        G4_RETURN_IF_ERROR(target.ForwardArgmaxOnDevice(slots.tokens.At(started % 2), 1, *cache, 1,
                                                        slots.tokens.At((started + 1) % 2)));
        G4_ASSIGN_OR_RETURN(auto read, be.StartDownload(*round_buf, ((started + 1) % 2) * sizeof(float), sizeof(float)));
        reads.push_back(std::move(read));
        ++started;
      }
      float id = 0.0f;
      G4_RETURN_IF_ERROR(reads.front()->Finish(&id));
      reads.pop_front();
      busy_us += static_cast<double>(cost_clock() - t0);
      RoundTrace round;
      round.position = cache->length() - (started - finished);
      round.seed = seed;
      round.bonus = seed = static_cast<int>(id);
      ++finished;
      count(round, 0, 0);
      G4_RETURN_IF_ERROR(emit(seed, 0));
      if (is_stop(seed)) {
        done = true;
        result.stop_reason = "eos";
      }
      interrupted();
    }
    if (done) return Status::Ok();
    // The next round's seed in slot 0, its state: the hidden state of the last step.
    if (n % 2) be.Copy(slots.tokens, slots.tokens.At(1), 1);
    be.Copy(state, target.hidden_rows().At(0), H);
    policy.RecordPlain(finished, busy_us);
    return Status::Ok();
  };

  // Records a greedy round of nd drafts at the cache's length and starts the read of its slots.
  auto record_and_read = [&](int nd) -> Result<std::unique_ptr<PendingDownload>> {
    G4_RETURN_IF_ERROR(RecordGreedyRound(target, assistant, *cache, state, F32{state_b.get(), 0}, slots, nd));
    return be.StartDownload(*round_buf, 0, round_host.size() * sizeof(float));
  };

  // decode_ahead 0 records nothing ahead of a read; else round_ahead decides (-1: as steps are).
  const bool ahead_rounds = options.decode_ahead != 0 && (options.round_ahead >= 0 ? options.round_ahead > 0 : overlap);

  // A greedy round recorded before the read of the round before it (ahead_rounds): its
  // positions are shifted on the backend by that round's accepted count (the verdict's first
  // slot), and its seed and state are copied from that round's verdict and verification rows.
  // Its start is final once that read is in. It is recorded only where every token it may give
  // is within the budget (so its positions are within the cache); a stop token or an
  // interruption before it leaves it unread.
  struct Ahead {
    std::unique_ptr<PendingDownload> read;
    int64_t position = 0;
    int nd = 0;
    int64_t t0 = 0;
  };
  std::optional<Ahead> next_round;
  // Records the next round while the one of nd drafts at p runs, if the policy would draft after
  // this round and the next round fits, however many of this round's drafts are accepted.
  auto record_ahead = [&](int64_t p, int nd, int remaining) -> Status {
    const int next = policy.NextAfterRound(nd);
    if (next < 1 || nd + next + 2 > remaining || p + nd + next + 2 > cache->max_positions()) return Status::Ok();
    G4_RETURN_IF_ERROR(cache->SetLength(p + 1));
    be.SetPositionShift(slots.verdict, nd);
    be.CopyRow(state, target.hidden_rows(), H, slots.verdict);
    be.Copy(slots.tokens, slots.verdict.At(1), 1);
    auto read = record_and_read(next);
    be.ClearPositionShift();
    if (!read.ok()) return read.status();
    next_round = Ahead{std::move(read).value(), p + 1, next, 0};
    return Status::Ok();
  };

  std::vector<int32_t> verify;
  std::vector<std::vector<float>> q_dists;
  while (!done && static_cast<int>(result.tokens.size()) < options.max_new_tokens) {
    std::optional<Ahead> recorded = std::exchange(next_round, std::nullopt);
    const int64_t p = recorded ? recorded->position : cache->length();
    const int remaining = options.max_new_tokens - static_cast<int>(result.tokens.size());
    const int want = recorded ? recorded->nd : policy.Next();
    if (want == 0 && ids_only) {
      G4_RETURN_IF_ERROR(plain_steps(std::min(policy.PlainSteps(), remaining)));
      continue;
    }
    int nd = recorded ? recorded->nd : std::min(want, remaining - 1);
    const int64_t round_t0 = recorded ? recorded->t0 : cost_clock();
    RoundTrace round;
    round.position = p;
    round.seed = seed;
    int m = 0, bonus = 0;
    if (ids_only) {
      // Drafts, verification and acceptance on the backend; one read of 2k + 4 floats.
      std::unique_ptr<PendingDownload> read;
      if (recorded) {
        read = std::move(recorded->read);
        st.rounds_ahead++;
      } else {
        G4_ASSIGN_OR_RETURN(read, record_and_read(nd));
      }
      if (ahead_rounds) G4_RETURN_IF_ERROR(record_ahead(p, nd, remaining));
      G4_RETURN_IF_ERROR(read->Finish(round_host.data()));
      for (int j = 0; j < nd; ++j) round.drafts.push_back(static_cast<int>(round_host[j + 1]));
      m = static_cast<int>(round_host[2 * k + 2]);
      bonus = static_cast<int>(round_host[2 * k + 3]);
      if (next_round) {
        // The next round runs after this one's m accepted drafts; its seed is already copied.
        next_round->position += m;
      } else {
        be.Copy(slots.tokens, slots.verdict.At(1), 1);  // the next round's seed
      }
    } else {
      // Draft nd tokens at position p, the j-th for the generated token of index e + j. A draft
      // from logits that are not finite stands in as token 0, is rejected whatever the target
      // says, and drafting stops there.
      const size_t e = result.tokens.size();
      int tok = seed;
      int usable = nd;  // drafts that may be accepted
      F32 s_in = state, s_out{state_b.get(), 0};
      q_dists.clear();
      for (int j = 0; j < nd; ++j) {
        G4_RETURN_IF_ERROR(assistant.Draft(tok, s_in, p, *cache, &draft_logits, s_out));
        if (coupled) {
          tok = choose(draft_logits, e + j);
        } else {
          q_dists.push_back(sampler.Distribution(draft_logits));
          tok = DrawFrom(q_dists.back(), options.sampler.seed, e + j);
        }
        if (tok < 0) {
          round.drafts.push_back(0);
          usable = j;
          nd = j + 1;
          break;
        }
        round.drafts.push_back(tok);
        std::swap(s_in, s_out);
      }
      // Verify [seed, drafts] in one forward.
      verify.assign(1, seed);
      verify.insert(verify.end(), round.drafts.begin(), round.drafts.end());
      G4_RETURN_IF_ERROR(target.Forward(verify, *cache, nd + 1, &logits));
      auto row = [&](int r) { return std::span<const float>(&logits[static_cast<size_t>(r) * V], V); };
      if (coupled) {
        // Accepted while each draft is the target's choice; the first that is not, its bonus.
        for (;; ++m) {
          const int c = choose(row(m), e + m);
          if (m < usable && round.drafts[m] == c) continue;
          bonus = c;
          break;
        }
      } else {
        // Accepted with probability min(1, p/q) (a draft q gives no probability to, from logits
        // that are not finite, is rejected); a rejected draft's place drawn from max(0, p - q).
        bool rejected = false;
        for (; m < nd; ++m) {
          const std::vector<float> pd = sampler.Distribution(row(m));
          const int c = round.drafts[m];
          const double ratio = q_dists[m][c] > 0.0f ? static_cast<double>(pd[c]) / q_dists[m][c] : 0.0;
          if (KeyedUniform(options.sampler.seed, e + m, kAcceptStream) < ratio) continue;
          bonus = SampleResidual(pd, q_dists[m], options.sampler.seed, e + m);
          rejected = true;
          break;
        }
        if (!rejected) bonus = choose(row(nd), e + nd);
      }
    }
    // The policy learns from rounds it chose whole (and, off the backend, from plain steps).
    const double round_us = static_cast<double>(cost_clock() - round_t0);
    if (nd > 0 && nd == want) {
      policy.RecordRound(nd, m, round_us);
    } else if (want == 0) {
      policy.RecordPlain(1, round_us);
    }
    round.accepted = m;
    round.bonus = bonus;
    // The counters count the drafts that were emitted: a stop token among the accepted drafts
    // ends generation there, and the drafts verification kept after it bought nothing.
    int emitted = m;
    for (int j = 0; j < m; ++j) {
      if (is_stop(round.drafts[j])) {
        emitted = j + 1;
        break;
      }
    }
    count(round, nd, emitted);
    // Emit the drafts counted and, unless a stop token among them ended generation, the bonus.
    for (int j = 0; j <= emitted && !done; ++j) {
      const int t = j < emitted ? round.drafts[j] : bonus;
      G4_RETURN_IF_ERROR(emit(t, static_cast<size_t>(j)));
      if (is_stop(t)) {
        done = true;
        result.stop_reason = "eos";
      }
    }
    // Keep the K/V of seed + accepted drafts; the next round starts from the bonus token with
    // the hidden state that produced it (a round recorded ahead copied it already). After a round
    // recorded ahead, or with one recorded ahead of this one's read, the host's length catches up
    // with the device's (forward too).
    G4_RETURN_IF_ERROR(recorded || next_round ? cache->SetLength(p + m + 1) : cache->Rollback(p + m + 1));
    if (next_round) {
      // The next round's cost, as the policy sees it, runs from here (not counting this round's
      // emission) to its read.
      next_round->t0 = cost_clock();
    } else {
      be.Copy(state, target.hidden_rows().At(static_cast<size_t>(m) * H), H);
    }
    seed = bonus;
    interrupted();
  }
  st.decode_us = MonotonicMicros() - t1_us;
  st.generated_tokens = static_cast<int>(result.tokens.size());
  return result;
}

}  // namespace g4
