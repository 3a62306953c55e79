// Stop strings over streamed pieces: nothing at or after the earliest stop string is released,
// a stop string split across pieces is caught, and text that only looked like a stop prefix is
// released once it cannot be one.
#include <gtest/gtest.h>

#include "core/error.h"
#include "engine/stop_strings.h"

namespace nextn {
namespace {

std::string feed(StopStringMatcher& m, const std::vector<std::string>& pieces) {
    std::string out;
    for (const auto& p : pieces) {
        out += m.push(p);
        if (m.stopped()) return out;
    }
    return out + m.flush();
}

TEST(StopStrings, SplitAcrossPieces) {
    StopStringMatcher m({"</answer>"});
    EXPECT_EQ("the answer is 4", feed(m, {"the ", "answer is 4</", "ans", "wer> and more"}));
    EXPECT_TRUE(m.stopped());
}

TEST(StopStrings, HeldPrefixReleasedWhenItDiverges) {
    StopStringMatcher m({"STOP"});
    EXPECT_EQ("a", m.push("aST"));  // "ST" may begin STOP: held
    EXPECT_EQ("STx", m.push("x"));
    EXPECT_FALSE(m.stopped());
    EXPECT_EQ("", m.push("STO"));
    EXPECT_EQ("STO", m.flush());
}

TEST(StopStrings, EarliestOfSeveralWins) {
    StopStringMatcher m({"world", "lo w"});
    EXPECT_EQ("hel", feed(m, {"hello world"}));
}

// The earliest occurrence wins whichever order the stop strings are listed in.
TEST(StopStrings, EarliestWinsInAnyListOrder) {
    StopStringMatcher m({"lo w", "world"});
    EXPECT_EQ("hel", feed(m, {"hello world"}));
    StopStringMatcher n({"world", "xyz", "lo w"});
    EXPECT_EQ("hel", feed(n, {"hello ", "world"}));
}

// A one-character prefix of a stop string is held back too.
TEST(StopStrings, SingleCharacterPrefixIsHeld) {
    StopStringMatcher m({"STOP"});
    EXPECT_EQ("x", m.push("xS"));
    EXPECT_EQ("", m.push("TOP and more"));
    EXPECT_TRUE(m.stopped());
}

// Once stopped, nothing more comes out: not what a later push adds, not the text after the stop
// string in the piece that completed it, and not from flush().
TEST(StopStrings, NothingIsReleasedAfterTheStop) {
    StopStringMatcher m({"END"});
    EXPECT_EQ("abc", m.push("abcEND tail"));
    EXPECT_TRUE(m.stopped());
    EXPECT_EQ("", m.push("more text"));
    EXPECT_EQ("", m.flush());
}

// flush() hands over what was held once; a second flush has nothing left.
TEST(StopStrings, FlushEmptiesTheHeldText) {
    StopStringMatcher m({"STOP"});
    EXPECT_EQ("a", m.push("aSTO"));
    EXPECT_EQ("STO", m.flush());
    EXPECT_EQ("", m.flush());
}

TEST(StopStrings, NoStopsPassesEverything) {
    StopStringMatcher m({});
    EXPECT_EQ("abc", feed(m, {"a", "b", "c"}));
    EXPECT_FALSE(m.stopped());
}

TEST(StopStrings, EmptyStopIsAnError) { EXPECT_THROW(StopStringMatcher({""}), Error); }

}  // namespace
}  // namespace nextn
