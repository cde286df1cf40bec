# Dates and times in the admin as everywhere else in crawlerweb (common/humanize.py):
# 24-hour, ISO order, the time zone named ("T": settings.TIME_ZONE's abbreviation).
DATETIME_FORMAT = "Y-m-d H:i:s T"
SHORT_DATETIME_FORMAT = "Y-m-d H:i T"
DATE_FORMAT = "Y-m-d"
SHORT_DATE_FORMAT = "Y-m-d"
TIME_FORMAT = "H:i:s"
