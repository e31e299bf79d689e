-- Calendar feeds are issued only through teamwork_issue_calendar_feed (sql/0048): the
-- manager's role no longer sets whether a feed is signed itself.
REVOKE UPDATE (signed) ON calendar_feeds FROM teamwork_manager;
