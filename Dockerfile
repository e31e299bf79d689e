# Teamwork's tools in an image: teamwork-manager and teamwork-service.
#   docker build -t teamwork .
# docker-compose.yml uses it for the migration step and the service.
# The toolchain the code needs (6.2 or later: InlineArray), as CI builds it; the versions pinned exactly in Package.swift
# (Package.resolved is not in git: it is resolved here, from a clean clone).
FROM swift:6.3-noble AS build
RUN apt-get update && apt-get install -y --no-install-recommends libsqlite3-dev && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Package.swift ./
COPY Plugins ./Plugins
COPY Sources ./Sources
COPY Tests ./Tests
COPY sql ./sql
RUN swift build -c release --static-swift-stdlib --product teamwork-manager \
 && swift build -c release --static-swift-stdlib --product teamwork-service \
 && mkdir /out && cp "$(swift build -c release --show-bin-path)"/teamwork-manager "$(swift build -c release --show-bin-path)"/teamwork-service /out/

FROM ubuntu:noble
RUN apt-get update && apt-get install -y --no-install-recommends libsqlite3-0 ca-certificates tzdata libjs-leaflet && rm -rf /var/lib/apt/lists/* \
 && useradd --system --create-home --home-dir /var/lib/teamwork teamwork
COPY --from=build /out/ /usr/local/bin/
USER teamwork
ENV TEAMWORK_HOME=/var/lib/teamwork TEAMWORK_REPLICAS=/var/lib/teamwork/replicas
VOLUME /var/lib/teamwork
ENTRYPOINT ["teamwork-service"]
CMD ["replicate"]
