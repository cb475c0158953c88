// The CLI's flag parser (cli/args.h) over the limits table: missing values, integers too large
// for 64 bits, ranges and choices, each error naming the flag.
#include <gtest/gtest.h>

#include "cli/args.h"

namespace g4::cli {
namespace {

Result<Args> Parse(const std::vector<std::string>& argv) {
  return Args::Parse(argv, {"model", "seed", "top-p", "draft-policy", "o"}, {"json"});
}

TEST(Args, AFlagWhereAValueShouldBeMeansTheValueIsMissing) {
  EXPECT_EQ(Parse({"--model", "--seed", "2"}).status().message(), "--model needs a value");
  EXPECT_EQ(Parse({"--model", "--json"}).status().message(), "--model needs a value");
  EXPECT_EQ(Parse({"--model", "-o", "x"}).status().message(), "--model needs a value");
  EXPECT_EQ(Parse({"--model"}).status().message(), "--model needs a value");
  // Values that only look like flags of other commands, or negative numbers, are values.
  auto a = Parse({"--model", "--other", "--seed", "-1"});
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(a->Get("model"), "--other");
  EXPECT_EQ(a->Get("seed"), "-1");
}

TEST(Args, TableOptionsAreCheckedAgainstTheirRanges) {
  auto a = Parse({"--seed", "18446744073709551615", "--top-p", "0"});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->GetOption(limits::kSeed).status().message(),
            "--seed must be an integer in [0, 9007199254740991], not 18446744073709551615");
  EXPECT_EQ(a->GetOption(limits::kTopP).status().message(), "--top-p must be a number in (0, 1], not 0");
  // Above 0 as a double, but 0 as the float32 the sampler takes.
  a = Parse({"--top-p", "1e-50"});
  EXPECT_EQ(a->GetOption(limits::kTopP).status().message(),
            "--top-p must be a number in (0, 1], not 1e-50 (which is 0 as a float32)");
  EXPECT_EQ(CheckLimit(limits::kTopP, 1e-50, "top_p").message(),
            "top_p must be a number in (0, 1], not 1e-50 (which is 0 as a float32)");
  a = Parse({"--seed", "x"});
  EXPECT_EQ(a->GetOption(limits::kSeed).status().message(), "--seed: not an integer: x");
  a = Parse({"--seed", "9007199254740991"});
  ASSERT_TRUE(a->GetOption(limits::kSeed).ok());
  EXPECT_EQ(a->GetOption(limits::kSeed).value(), 9007199254740991.0);
  EXPECT_FALSE(a->GetOption(limits::kTopP)->has_value());
  EXPECT_EQ(a->GetOption(limits::kTopP, 0.5).value(), 0.5);
  // GetInt (the commands' own flags) says out of range for integers too large for 64 bits.
  a = Parse({"--seed", "18446744073709551615"});
  EXPECT_EQ(a->GetInt("seed", 0, 0, 10).status().message(), "--seed: 18446744073709551615 is outside [0, 10]");
}

TEST(Args, AChoiceTakesItsWords) {
  constexpr Limit kPolicy{"draft_policy", "draft-policy", "draftPolicy", LimitKind::kChoice, 0, 0, false, kNoDefault,
                          kNoDefault, "adaptive", "how many drafts a round makes", "adaptive|fixed"};
  EXPECT_EQ(Parse({})->GetChoice(kPolicy).value(), "adaptive");
  EXPECT_EQ(Parse({"--draft-policy", "fixed"})->GetChoice(kPolicy).value(), "fixed");
  EXPECT_EQ(Parse({"--draft-policy=some"})->GetChoice(kPolicy).status().message(),
            "--draft-policy must be one of 'adaptive', 'fixed', not 'some'");
}

}  // namespace
}  // namespace g4::cli
