// Agent-chosen text is stored up to a cap, with a visible mark where it was cut: an agent
// sending 7 KB paths must not grow the database by 7 KB a request.
#include "netbox/audit/stored_text.hpp"
#include "netbox/audit/writer.hpp"
#include "support/sample_records.hpp"
#include "sqlite_probe.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

namespace netbox::audit {
namespace {

using testing::request;
using testing::SqliteProbe;

TEST(StoredText, ShortTextIsKeptAsItIs) {
  EXPECT_EQ(capped("/index.html", 16), "/index.html");
  EXPECT_EQ(capped(std::string(16, 'a'), 16), std::string(16, 'a'));
}

TEST(StoredText, LongTextIsCutAndSaysHowMuchWasLeftOut) {
  EXPECT_EQ(capped(std::string(20, 'a'), 16), std::string(16, 'a') + "\xE2\x80\xA6[truncated 4 bytes]");
}

TEST(StoredText, TheCutNeverSplitsAUtf8Sequence) {
  // "é" is two bytes; a cut after 3 bytes would leave half of the second one.
  EXPECT_EQ(capped("a\xC3\xA9\xC3\xA9z", 4), "a\xC3\xA9\xE2\x80\xA6[truncated 3 bytes]");
}

TEST(StoredText, TheWriterStoresCappedAgentText) {
  test::TempDir dir;
  const auto path = dir.path() / "audit.db";
  {
    WriterOptions o;
    o.db_path = path;
    Writer writer(o);
    auto r = request("a", std::string(5000, 'h'), "deny");
    r.path = "/" + std::string(7000, 'p');
    r.method = std::string(300, 'M');
    r.reason = std::string(5000, 'r');
    writer.insert_complete(r);
    auto open = request("a", "ok.example", "allow");
    const auto h = writer.insert(open);
    Completion c;
    c.error = std::string(9000, 'e');
    writer.complete(h, c);
  }
  SqliteProbe probe(path);
  EXPECT_EQ(probe.number("SELECT length(CAST(path AS BLOB)) FROM requests WHERE decision = 'deny'"),
            static_cast<std::int64_t>(capped("/" + std::string(7000, 'p'), kMaxStoredPath).size()));
  EXPECT_NE(probe.text("SELECT path FROM requests WHERE decision = 'deny'").find("[truncated 4953 bytes]"),
            std::string::npos);
  EXPECT_LE(probe.number("SELECT length(CAST(host AS BLOB)) FROM requests WHERE decision = 'deny'"), 600);
  EXPECT_LE(probe.number("SELECT length(CAST(method AS BLOB)) FROM requests WHERE decision = 'deny'"), 100);
  EXPECT_LE(probe.number("SELECT length(CAST(reason AS BLOB)) FROM requests WHERE decision = 'deny'"), 1100);
  EXPECT_LE(probe.number("SELECT length(CAST(error AS BLOB)) FROM requests WHERE decision = 'allow'"), 1100);
}

}  // namespace
}  // namespace netbox::audit
