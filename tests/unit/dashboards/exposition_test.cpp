// The Prometheus text format as a scraper parses it.
#include "netbox/dashboards/exposition.hpp"

#include <gtest/gtest.h>

using netbox::dashboards::Exposition;

TEST(Exposition, CounterHasHelpTypeOnceAndLabelledSamples) {
  Exposition e;
  e.counter("netbox_requests_total", "Requests by decision.", {{"decision", "allow"}}, 3);
  e.counter("netbox_requests_total", "Requests by decision.", {{"decision", "deny"}}, 1);
  EXPECT_EQ(e.text(),
            "# HELP netbox_requests_total Requests by decision.\n"
            "# TYPE netbox_requests_total counter\n"
            "netbox_requests_total{decision=\"allow\"} 3\n"
            "netbox_requests_total{decision=\"deny\"} 1\n");
}

TEST(Exposition, LabelValuesAreEscaped) {
  Exposition e;
  e.gauge("g", "h", {{"agent", "a\"b\\c\nd"}}, 1.5);
  EXPECT_NE(e.text().find("g{agent=\"a\\\"b\\\\c\\nd\"} 1.5\n"), std::string::npos) << e.text();
}

TEST(Exposition, HistogramBucketsAreCumulativeWithInfSumAndCount) {
  Exposition e;
  e.histogram("netbox_dns_lookup_seconds", "DNS lookup time.", {}, {0.001, 0.01, 0.1}, {2, 3, 0, 1}, 0.5);
  const std::string& t = e.text();
  EXPECT_NE(t.find("# TYPE netbox_dns_lookup_seconds histogram\n"), std::string::npos);
  EXPECT_NE(t.find("netbox_dns_lookup_seconds_bucket{le=\"0.001\"} 2\n"), std::string::npos) << t;
  EXPECT_NE(t.find("netbox_dns_lookup_seconds_bucket{le=\"0.01\"} 5\n"), std::string::npos) << t;
  EXPECT_NE(t.find("netbox_dns_lookup_seconds_bucket{le=\"0.1\"} 5\n"), std::string::npos) << t;
  EXPECT_NE(t.find("netbox_dns_lookup_seconds_bucket{le=\"+Inf\"} 6\n"), std::string::npos) << t;
  EXPECT_NE(t.find("netbox_dns_lookup_seconds_sum 0.5\n"), std::string::npos) << t;
  EXPECT_NE(t.find("netbox_dns_lookup_seconds_count 6\n"), std::string::npos) << t;
}

TEST(Exposition, LargeCountersPrintAsIntegers) {
  Exposition e;
  e.counter("c_total", "h", {}, 12345678901.0);
  EXPECT_NE(e.text().find("c_total 12345678901\n"), std::string::npos) << e.text();
}
