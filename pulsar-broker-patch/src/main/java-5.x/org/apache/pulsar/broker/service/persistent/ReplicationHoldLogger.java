/*
 * Licensed to the Apache Software Foundation (ASF) under one
 * or more contributor license agreements.  See the NOTICE file
 * distributed with this work for additional information
 * regarding copyright ownership.  The ASF licenses this file
 * to you under the Apache License, Version 2.0 (the
 * "License"); you may not use this file except in compliance
 * with the License.  You may obtain a copy of the License at
 *
 *   http://www.apache.org/licenses/LICENSE-2.0
 *
 * Unless required by applicable law or agreed to in writing,
 * software distributed under the License is distributed on an
 * "AS IS" BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY
 * KIND, either express or implied.  See the License for the
 * specific language governing permissions and limitations
 * under the License.
 */
package org.apache.pulsar.broker.service.persistent;

import io.github.merlimat.slog.Logger;
import java.util.concurrent.TimeUnit;
import org.apache.bookkeeper.mledger.Position;

/**
 * {@link ReplicationHoldLog} with the structured logger, as the 5.x replicator logs: the replicator and the remote
 * cluster are attributes of every line, the figures attributes of their own.
 */
public class ReplicationHoldLogger implements ReplicationHoldLog {
    private static final Logger LOG = Logger.get(ReplicationRetryBackoff.class);

    private final Logger log;

    public ReplicationHoldLogger(String replicatorId, String remoteCluster) {
        this.log = LOG.with().attr("replicator", replicatorId).attr("remoteCluster", remoteCluster).build();
    }

    @Override
    public void held(Hold hold, long maxDelayMillis) {
        log.warn()
                .attr("position", hold.held())
                .attr("reason", hold.reason())
                .attr("retryInMs", hold.delayMillis())
                .attr("maxDelaySec", TimeUnit.MILLISECONDS.toSeconds(maxDelayMillis))
                .log("Replication is held at a source position the remote cluster refused. It is sent again after"
                        + " the delay, then with a delay doubling up to the maximum, one message at a time; the"
                        + " messages after it wait behind it. Remove the cause on the remote cluster (for example"
                        + " raise its topic-level max message size), or give the message up: 'topics skip' on the"
                        + " replicator cursor, then unload the topic on the remote cluster");
    }

    @Override
    public void stillHeld(Hold hold, long intervalMillis) {
        log.warn()
                .attr("position", hold.held())
                .attr("heldSec", TimeUnit.MILLISECONDS.toSeconds(hold.heldMillis()))
                .attr("attempts", hold.attempts())
                .attr("refusals", hold.refusals())
                .attr("intervalSec", TimeUnit.MILLISECONDS.toSeconds(intervalMillis))
                .attr("retryInMs", hold.delayMillis())
                .attr("reason", hold.reason())
                .log("Replication still held at a source position the remote cluster refuses");
    }

    @Override
    public void refusedAgain(Hold hold) {
        log.debug()
                .attr("position", hold.held())
                .attr("attempts", hold.attempts())
                .attr("retryInMs", hold.delayMillis())
                .attr("reason", hold.reason())
                .log("Replication held: refused again");
    }

    @Override
    public void resumed(Position stored, Position held, long heldMillis, int attempts) {
        log.info()
                .attr("stored", stored)
                .attr("position", held)
                .attr("heldMs", heldMillis)
                .attr("attempts", attempts)
                .log("Replication resumed: the remote cluster stored the held message or one after it");
    }

    @Override
    public void released(Position held, String why) {
        log.info()
                .attr("position", held)
                .attr("why", why)
                .log("Replication no longer held: the held message left the backlog");
    }

    @Override
    public void droppedAfterStop() {
        log.info("A resend came due after the replicator stopped: dropped");
    }

    @Override
    public void retryFailed(Throwable cause) {
        log.error().exception(cause).log("A resend failed to start");
    }
}
