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

import static org.pulsarfork.bench.BenchGroups.FORK_ONLY;
import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertNull;
import static org.testng.Assert.assertTrue;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.apache.bookkeeper.mledger.Position;
import org.apache.bookkeeper.mledger.PositionFactory;
import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.core.LogEvent;
import org.apache.logging.log4j.core.Logger;
import org.apache.logging.log4j.core.LoggerContext;
import org.apache.logging.log4j.core.appender.AbstractAppender;
import org.apache.logging.log4j.core.config.Property;
import org.testng.annotations.AfterMethod;
import org.testng.annotations.BeforeMethod;
import org.testng.annotations.Test;

/**
 * What an operator reads of a replication hold, with the line's own logging API (SLF4J on 4.x, the structured
 * logger on 5.x): the WARN names the replicator, the remote cluster, the position and the reason, and says what
 * to do; a refusal carries no stack trace; a refusal while held is not logged at INFO.
 */
public class ReplicationHoldLoggerTest {
    private static final Position E3 = PositionFactory.create(12, 3);
    private static final String TOO_LARGE = "Message size is larger than the topic's maximum";

    private final List<LogEvent> events = new CopyOnWriteArrayList<>();
    private final AbstractAppender appender = new AbstractAppender("hold-log", null, null, true,
            Property.EMPTY_ARRAY) {
        @Override
        public void append(LogEvent event) {
            events.add(event.toImmutable());
        }
    };
    private Logger logger;
    private Level level;

    @BeforeMethod(alwaysRun = true)
    public void captureTheBackoffLogger() {
        events.clear();
        appender.start();
        logger = ((LoggerContext) LogManager.getContext(false)).getLogger(ReplicationRetryBackoff.class.getName());
        level = logger.getLevel();
        logger.addAppender(appender);
        logger.setLevel(Level.INFO);
    }

    @AfterMethod(alwaysRun = true)
    public void release() {
        logger.removeAppender(appender);
        logger.setLevel(level);
    }

    // The message with its attributes (5.x puts the figures there, 4.x in the message).
    private static String rendered(LogEvent event) {
        return event.getMessage().getFormattedMessage() + " " + event.getContextData().toMap();
    }

    @Test(groups = FORK_ONLY)
    public void theHeldWarningNamesThePositionTheRemoteTheReasonAndTheWayOut() {
        ReplicationHoldLog log = new ReplicationHoldLogger("persistent://t/ns/held-r1-r2", "r2");
        ReplicationHoldLog.Hold hold = new ReplicationHoldLog.Hold(E3, 0, 1, 1, 100, TOO_LARGE);
        log.held(hold, TimeUnit.SECONDS.toMillis(60));
        log.refusedAgain(new ReplicationHoldLog.Hold(E3, 100, 2, 2, 200, TOO_LARGE));
        log.stillHeld(new ReplicationHoldLog.Hold(E3, 61_000, 9, 12, 25_600, TOO_LARGE),
                ReplicationRetryBackoff.SUMMARY_INTERVAL_MILLIS);
        log.resumed(E3, E3, 62_000, 10);

        assertEquals(events.size(), 3, "held, still held, resumed; the refusal in between is debug: " + events);
        LogEvent held = events.get(0);
        String text = rendered(held);
        assertEquals(held.getLevel(), Level.WARN);
        assertTrue(text.contains("held-r1-r2") && text.contains("r2") && text.contains(E3.toString())
                && text.contains(TOO_LARGE) && text.contains("'topics skip' on the replicator cursor"), text);
        assertEquals(events.get(1).getLevel(), Level.WARN);
        assertTrue(rendered(events.get(1)).contains("25600"), rendered(events.get(1)));
        assertEquals(events.get(2).getLevel(), Level.INFO);
        for (LogEvent event : events) {
            assertNull(event.getThrown(), "no stack trace for a refusal: " + rendered(event));
        }
    }
}
